// Starting the real `ferry` binary for the browser tests, and talking to it as an agent.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Starts `ferry serve` on a new data folder, secret and port; `again` restarts it on those of
 * an earlier start (`{ data, secret, addr }`), as a server that came back after a crash.
 */
export async function startFerry(bin, extraEnv = {}, again = null) {
  const data = again?.data ?? mkdtempSync(join(tmpdir(), 'ferry-e2e-data-'));
  const secret = again?.secret ?? randomBytes(32).toString('hex');
  const env = {
    ...process.env,
    FERRY_JWT_SECRET: secret,
    FERRY_LOG: process.env.FERRY_LOG || 'info',
    ...extraEnv,
  };
  const child = spawn(bin, ['serve', '--addr', again?.addr ?? '127.0.0.1:0', '--data', data], {
    env, stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log = [];
  const addr = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ferry did not print its address in 30 s:\n${log.join('')}`)), 30000);
    let buffer = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log.push(chunk);
      if (log.length > 2000) log.splice(0, 1000);
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const m = /addr=(\S+)/.exec(line.replace(/\x1b\[[0-9;]*m/g, ''));
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ferry exited (${code}) before listening:\n${log.join('')}`));
    });
  });
  const base = `http://${addr}`;
  await waitHealthy(base);
  return {
    base,
    data,
    secret,
    addr,
    log,
    /** Ends the server as a crash would: SIGKILL, nothing flushed, the data left as it is. */
    async crash() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
    token(args) {
      return execFileSync(bin, ['token', ...args], { env: { ...process.env, FERRY_JWT_SECRET: secret } }).toString().trim();
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => {
          const t = setTimeout(() => { child.kill('SIGKILL'); resolve(); }, 5000);
          child.on('exit', () => { clearTimeout(t); resolve(); });
        });
      }
      rmSync(data, { recursive: true, force: true });
    },
  };
}

async function waitHealthy(base) {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('ferry did not become healthy');
}

/** A client of the API with one bearer token (an agent, or a user outside the browser). */
export function client(base, token) {
  async function call(method, path, { json, body, headers = {} } = {}) {
    const init = { method, headers: { Authorization: `Bearer ${token}`, ...headers } };
    if (json !== undefined) {
      init.body = JSON.stringify(json);
      init.headers['Content-Type'] = 'application/json';
    } else if (body !== undefined) {
      init.body = body;
    }
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    if (!response.ok) {
      const error = new Error(`${method} ${path} → ${response.status}: ${text.slice(0, 400)}`);
      error.status = response.status;
      error.body = parsed;
      throw error;
    }
    return parsed;
  }
  return {
    call,
    get: (path) => call('GET', path),
    post: (path, json) => call('POST', path, { json }),
    put: (path, body, contentType) => call('PUT', path, { body, headers: { 'Content-Type': contentType } }),
  };
}

/**
 * Whether the server started here draws a presentation's slides: it finds LibreOffice's
 * `soffice` and bubblewrap's `bwrap` on PATH, as `ferry serve` looks for them.
 */
export function drawsSlides() {
  const onPath = (name) => (process.env.PATH || '').split(':').some((dir) => dir && existsSync(join(dir, name)));
  return onPath('soffice') && onPath('bwrap');
}
