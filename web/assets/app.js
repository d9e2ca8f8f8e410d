// ferry's web app: sign-in, the shell (threads sidebar, main area, preview panel) and the
// routes `/`, `/t/{thread}`, `/spaces` and `/spaces/{space}`.
import { h, replace, announce, developerDetails } from './dom.js';
import { icon } from './icons.js';
import { formatWhen } from './format.js';
import { adoptTokenFromLocation, getToken, setToken, clearToken, tokenState } from './auth.js';
import { route, getJson, sendJson, onUnauthenticated } from './api.js';
import { ThreadView, threadNotFound, loadingView } from './thread-view.js';
import { PreviewPanel } from './preview.js';
import { SpacesView } from './spaces.js';
import { S3KeysPanel } from './s3-keys.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';
import { ThreadSearch, byActivity, fold, followThreadList, withThread } from './thread-list.js';

/**
 * The shell's parts that change, made by buildShell().
 * @typedef {{ menu: HTMLButtonElement, list: HTMLUListElement, search: HTMLInputElement,
 *   sidebar: HTMLElement, main: HTMLElement, layout: HTMLDivElement }} Shell
 */

/**
 * A route of the app, read from the path (parseRoute).
 * @typedef {{ name: 'thread', id: string } | { name: 'spaces', space?: string } | { name: 'settings' }
 *   | { name: 'home' } | { name: 'missing' }} Route
 */

/** Why the sign-in screen is shown. @typedef {'missing' | 'malformed' | 'expired' | 'rejected' | 'signedOut'} SignInReason */

// index.html has the app's root.
const root = /** @type {HTMLElement} */ (document.getElementById('app'));

/**
 * The page's state. While signed in, `claims`, `preview` and `els` are there (boot() and
 * buildShell() make them before anything else reads them: the casts below say so).
 * @type {{
 *   claims: import('./auth.js').Claims | null,
 *   view: ThreadView | SpacesView | null,
 *   threads: Thread[],
 *   threadsLoaded: boolean,
 *   threadsRetry: { stop: () => void } | null,
 *   threadFeed: { stop: () => void } | null,
 *   found: { query: string, threads: Thread[], failed: boolean } | null,
 *   search: ThreadSearch | null,
 *   loading: { stop: () => void } | null,
 *   preview: PreviewPanel | null,
 *   expiryTimer: number | null,
 *   els: Shell,
 *   currentThreadId?: string | null,
 *   renderSeq?: number,
 * }}
 */
const app = {
  claims: null,
  view: null,
  threads: [],
  threadsLoaded: false,
  threadsRetry: null,
  /** The live thread list (thread-list.js), while signed in. */
  threadFeed: null,
  /** The server's answer to the search box: `{ query, threads }`, or null while none. */
  found: null,
  search: null,
  loading: null,
  preview: null,
  expiryTimer: null,
  // Made by buildShell() before any view is shown.
  els: /** @type {Shell} */ ({}),
};

// ---- sign-in -------------------------------------------------------------------------------

/**
 * Shows the sign-in screen, saying why; `detail` is what the server said.
 * @param {SignInReason} reason
 * @param {string} [detail]
 */
function signInScreen(reason, detail) {
  app.view?.destroy?.();
  app.view = null;
  app.loading?.stop();
  app.threadsRetry?.stop();
  app.threadFeed?.stop();
  app.threadFeed = null;
  app.preview?.close();
  clearTimeout(app.expiryTimer);
  const titles = {
    missing: 'Sign in to ferry',
    malformed: 'That sign-in link is not valid',
    expired: 'Your sign-in has expired',
    rejected: 'Please sign in again',
    signedOut: 'You are signed out',
  };
  const explanations = {
    missing: 'ferry signs you in with a link that carries your access token.',
    malformed: 'The token in the link could not be read. It may have been cut off when it was copied.',
    expired: 'The token you signed in with is no longer valid, so ferry cannot show your threads.',
    rejected: 'The server did not accept your token.',
    signedOut: 'Your token was removed from this tab.',
  };
  const input = h('input', {
    id: 'token-input', class: 'input', type: 'password', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': 'token-help',
  });
  const error = h('p', { class: 'form-error', role: 'alert' });
  error.hidden = true;
  document.title = 'Sign in · ferry';
  root.removeAttribute('aria-busy');
  root.dataset.route = 'signin';
  replace(root, h('main', { id: 'main', class: 'signin', tabindex: '-1' },
    h('div', { class: 'signin-card' },
      h('div', { class: 'brand brand-large' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'ferry'),
      h('h1', { id: 'signin-title', text: titles[reason] || titles.missing }),
      h('p', { class: 'signin-reason', text: explanations[reason] || explanations.missing }),
      detail ? h('p', { class: 'note', text: `The server said: ${detail}` }) : null,
      h('p', { text: 'Open the sign-in link you were given, or ask whoever runs ferry for your team for a new one.' }),
      developerDetails(
        h('p', {}, 'ferry serve prints a sign-in link when it starts (it ends in ', h('code', { text: '/#token=…' }),
          '); ', h('code', { text: 'ferry token --user NAME' }), ' prints a token for anyone.')),
      h('form', {
        class: 'token-form', 'aria-labelledby': 'signin-title',
        onsubmit: (e) => {
          e.preventDefault();
          const token = input.value.trim();
          const state = tokenState(token);
          if (state.state !== 'ok') {
            error.textContent = state.state === 'expired' ? 'That token has expired.' : 'That does not look like a ferry token.';
            error.hidden = false;
            input.focus();
            return;
          }
          setToken(token);
          input.value = '';
          boot();
        },
      },
      h('label', { for: 'token-input', class: 'field-label', text: 'Or paste an access token' }),
      h('div', { class: 'field-row' }, input, h('button', { type: 'submit', class: 'btn btn-primary', text: 'Sign in' })),
      h('p', { id: 'token-help', class: 'field-help', text: 'The token stays in this browser tab only, and is forgotten when you close it.' }),
      error))));
  // The screen's heading, made just above.
  /** @type {HTMLHeadingElement} */ (root.querySelector('h1')).setAttribute('tabindex', '-1');
  /** @type {HTMLHeadingElement} */ (root.querySelector('h1')).focus();
}

// ---- the shell -----------------------------------------------------------------------------

function buildShell() {
  const sub = /** @type {import('./auth.js').Claims} */ (app.claims).sub;
  const menu = h('button', {
    type: 'button', class: 'btn btn-icon menu-toggle', 'aria-label': 'Show threads', 'aria-expanded': 'false', 'aria-controls': 'sidebar',
    onclick: () => toggleSidebar(),
  }, icon('menu'));
  const createError = h('p', { class: 'form-error', role: 'alert' });
  createError.hidden = true;
  const list = h('ul', { class: 'thread-list', 'aria-label': 'Your threads' });
  const search = h('input', {
    id: 'thread-search', class: 'input', type: 'search', name: 'q', autocomplete: 'off',
    placeholder: 'Search threads', 'aria-label': 'Search threads: titles, messages and file names', 'aria-controls': 'thread-list',
    oninput: () => {
      /** @type {ThreadSearch} */ (app.search).query(search.value.trim());
      renderThreadList();
    },
  });
  list.id = 'thread-list';
  const sidebar = h('aside', { id: 'sidebar', class: 'sidebar', 'aria-label': 'Threads' },
    // A new thread needs no name: it takes one from its first message (thread-view.js).
    h('form', {
      class: 'new-thread', 'aria-label': 'Create a thread',
      onsubmit: async (e) => {
        e.preventDefault();
        createError.hidden = true;
        // The form's one button, which submits it.
        const button = /** @type {HTMLButtonElement} */ (e.submitter || /** @type {HTMLFormElement} */ (e.target).querySelector('button'));
        button.disabled = true;
        try {
          /** @type {Thread} */
          const thread = await sendJson('POST', route('threads'), {});
          app.threads = withThread(app.threads, thread);
          renderThreadList();
          announce('New thread created');
          navigate(`/t/${encodeURIComponent(thread.id)}`);
        } catch (err) {
          createError.textContent = `The thread was not created: ${/** @type {import('./api.js').Failure} */ (err).message}`;
          createError.hidden = false;
        } finally {
          button.disabled = false;
        }
      },
    },
    h('button', { type: 'submit', class: 'btn btn-primary new-thread-button' }, icon('plus'), h('span', { class: 'label', text: 'New thread' })),
    createError),
    h('h2', { class: 'sidebar-title', id: 'threads-heading', text: 'Threads' }),
    h('div', { class: 'thread-search', role: 'search' }, icon('search'), search),
    list);
  const main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
  const scrim = h('div', { class: 'scrim', 'aria-hidden': 'true', onclick: () => toggleSidebar(false) });
  const layout = h('div', { class: 'layout' }, sidebar, scrim, main);
  const announcer = h('div', { id: 'announcer', class: 'visually-hidden', 'aria-live': 'polite', 'aria-atomic': 'true' });
  replace(root,
    h('header', { class: 'topbar' },
      menu,
      h('a', { class: 'brand', href: '/', 'data-nav': '', 'aria-label': 'ferry, home' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'ferry'),
      h('nav', { class: 'topnav', 'aria-label': 'Main' },
        h('a', { href: '/', 'data-nav': '', class: 'nav-threads', text: 'Threads' }),
        h('a', { href: '/spaces', 'data-nav': '', class: 'nav-spaces', text: 'Spaces' }),
        h('a', { href: '/settings', 'data-nav': '', class: 'nav-settings', text: 'Settings' })),
      h('span', { class: 'who', title: `Signed in as ${sub}` }, h('span', { class: 'who-label', text: 'Signed in as ' }), h('strong', { text: sub })),
      h('button', {
        type: 'button', class: 'btn btn-icon signout', 'aria-label': 'Sign out', title: 'Sign out',
        onclick: () => {
          clearToken();
          signInScreen('signedOut');
        },
      }, icon('signout'))),
    layout,
    announcer);
  root.removeAttribute('aria-busy');
  app.els = { menu, list, search, sidebar, main, layout };
  app.preview = new PreviewPanel(layout);
}

/**
 * Opens or closes the sidebar (a narrow screen's); `force` says which, else it toggles.
 * @param {boolean} [force]
 */
function toggleSidebar(force) {
  const open = force ?? !root.classList.contains('sidebar-open');
  root.classList.toggle('sidebar-open', open);
  app.els.menu.setAttribute('aria-expanded', String(open));
  app.els.menu.setAttribute('aria-label', open ? 'Hide threads' : 'Show threads');
  if (open) /** @type {HTMLElement | null} */ (app.els.sidebar.querySelector('input, a'))?.focus();
}

/** @param {string | null} [currentId] The thread shown, whose link is marked current. */
function renderThreadList(currentId = app.currentThreadId) {
  const { list, search } = app.els;
  if (!list) return;
  // Until the list is read, its failure (with Retry) stays: no thread is not "no threads yet".
  if (!app.threadsLoaded && list.querySelector(':scope > .load-failure')) return;
  if (!app.threads.length) {
    replace(list, h('li', { class: 'thread-empty', text: 'No threads yet. Start one with New thread.' }));
    return;
  }
  const typed = search.value.trim();
  const shown = typed ? searched(typed) : app.threads;
  if (!shown.length) {
    const asking = !app.found || app.found.query !== typed;
    const text = asking ? 'Searching…'
      // Not asking: the answer to this query is there.
      : /** @type {NonNullable<typeof app.found>} */ (app.found).failed ? `No thread title holds “${typed}”, and messages could not be searched just now.`
        : `No thread mentions “${typed}”.`;
    replace(list, h('li', { class: 'thread-empty', role: 'status', text }));
    return;
  }
  replace(list, shown.map((t) => h('li', {},
    h('a', {
      href: `/t/${encodeURIComponent(t.id)}`, 'data-nav': '', class: 'thread-link',
      'aria-current': t.id === currentId ? 'page' : null,
    },
    icon('chat'),
    h('span', { class: 'thread-link-text' },
      h('span', { class: 'thread-link-title', text: t.title || 'Untitled thread' }),
      h('span', { class: 'thread-link-when', text: formatWhen(t.lastActivityAt || t.createdAt) }))))));
}

/**
 * The threads the search box finds: those whose title holds the text (ignoring case and
 * accents, at once), with those the server found by their messages and file names once it
 * answers — every one as this page knows it now, in activity order.
 * @param {string} typed
 * @returns {Thread[]}
 */
function searched(typed) {
  const query = fold(typed);
  const ids = new Set(app.threads.filter((t) => fold(t.title || 'Untitled thread').includes(query)).map((t) => t.id));
  if (app.found?.query === typed) for (const t of app.found.threads) ids.add(t.id);
  return app.threads.filter((t) => ids.has(t.id));
}

/** Shows the list again after a change, keeping the focus where it was (retry.js). */
function refreshThreadList() {
  showKeepingFocus(app.els.list, () => renderThreadList(), () => app.els.list.querySelector('a') || app.els.search);
}

/** Lists the person's threads in the sidebar; a failure says so there, with Retry (retry.js). */
function loadThreads() {
  app.threadsRetry?.stop();
  app.threadsRetry = keepTrying(async () => {
    /** @type {ThreadList} */
    const { threads } = await getJson(route('threads'));
    // Threads this page made or opened meanwhile stay listed.
    const known = new Set((threads || []).map((t) => t.id));
    app.threads = [...app.threads.filter((t) => !known.has(t.id)), ...(threads || [])].sort(byActivity);
    app.threadsLoaded = true;
    refreshThreadList();
  }, {
    onError: (e, attempt) => {
      if (e.status === 401) return false;
      showFailure(app.els.list, { message: 'Threads could not be loaded', error: e, attempt, tag: 'li', compact: true });
      return undefined;
    },
  });
}

/**
 * Keeps the list current with what happens in other tabs and devices: threads made, renamed,
 * active or deleted. A deleted thread that is open here closes with a note.
 */
function followThreads() {
  app.threadFeed?.stop();
  app.threadFeed = followThreadList({
    onList: (threads) => {
      // The open thread may be newer than the list (made here while it was read), or gone
      // (deleted while the stream was away): asked for, it says which.
      const open = app.threads.find((t) => t.id === app.currentThreadId);
      app.threads = open && !threads.some((t) => t.id === open.id) ? withThread(threads, open) : threads;
      app.threadsLoaded = true;
      app.threadsRetry?.stop();
      refreshThreadList();
      if (open && !threads.some((t) => t.id === open.id)) {
        getJson(route('threads', open.id)).catch((/** @type {import('./api.js').Failure} */ e) => {
          if (e.status !== 404) return;
          app.threads = app.threads.filter((t) => t.id !== open.id);
          refreshThreadList();
          threadGone(open.id);
        });
      }
    },
    onThread: (thread) => {
      app.threads = withThread(app.threads, thread);
      refreshThreadList();
      // The open thread's view, once it is shown.
      if (thread.id === app.currentThreadId) /** @type {ThreadView | null} */ (app.view)?.renamedElsewhere?.(thread);
    },
    onDeleted: (id) => {
      app.threads = app.threads.filter((t) => t.id !== id);
      refreshThreadList();
      threadGone(id);
    },
  });
}

/**
 * The open thread was deleted elsewhere: its view closes with a note saying so.
 * @param {string} id
 */
function threadGone(id) {
  if (id !== app.currentThreadId || !(app.view instanceof ThreadView)) return;
  app.view.destroy?.();
  app.view = null;
  document.title = 'Thread deleted · ferry';
  replace(app.els.main, h('section', { class: 'notice thread-gone', 'aria-labelledby': 'thread-gone-title' },
    h('h1', { id: 'thread-gone-title', tabindex: '-1', text: 'This thread was deleted' }),
    h('p', { text: 'It was deleted in another tab or window, or by an app acting for you. Its messages and files are gone.' }),
    h('p', {}, h('a', { href: '/', 'data-nav': '', text: 'Back to your threads' }))));
  announce('This thread was deleted elsewhere');
  app.els.main.querySelector('h1')?.focus();
}

/**
 * The person's settings: who they are signed in as, and their S3 access keys.
 * @param {string} sub
 * @returns {HTMLElement}
 */
function settingsView(sub) {
  return h('section', { class: 'settings', 'aria-labelledby': 'settings-title' },
    h('header', { class: 'page-header' },
      h('h1', { id: 'settings-title', tabindex: '-1', text: 'Settings' }),
      h('p', { class: 'page-sub' }, 'Signed in as ', h('strong', { text: sub }), '.')),
    new S3KeysPanel().el);
}

// ---- routing -------------------------------------------------------------------------------

/**
 * @param {string} pathname
 * @returns {Route}
 */
function parseRoute(pathname) {
  let m = /^\/t\/([^/]+)\/?$/.exec(pathname);
  if (m) return { name: 'thread', id: decodeURIComponent(m[1]) };
  if (pathname === '/spaces' || pathname === '/spaces/') return { name: 'spaces' };
  m = /^\/spaces\/([^/]+)\/?$/.exec(pathname);
  if (m) return { name: 'spaces', space: decodeURIComponent(m[1]) };
  if (pathname === '/settings' || pathname === '/settings/') return { name: 'settings' };
  if (pathname === '/' || pathname === '') return { name: 'home' };
  return { name: 'missing' };
}

/**
 * Goes to `path` in the app, without reloading the page.
 * @param {string} path
 * @param {{ replaceState?: boolean }} [options] `replaceState`: in place of the history entry.
 */
export function navigate(path, { replaceState = false } = {}) {
  if (replaceState) window.history.replaceState(null, '', path);
  else if (path !== window.location.pathname) window.history.pushState(null, '', path);
  render();
}

async function render() {
  if (!checkToken()) return;
  const r = parseRoute(window.location.pathname);
  app.view?.destroy?.();
  app.view = null;
  app.loading?.stop();
  app.loading = null;
  /** @type {PreviewPanel} */ (app.preview).close();
  toggleSidebar(false);
  root.dataset.route = r.name;
  app.currentThreadId = r.name === 'thread' ? r.id : null;
  renderThreadList();
  for (const a of root.querySelectorAll('.topnav a')) a.removeAttribute('aria-current');
  const navCurrent = root.querySelector(/** @type {Partial<Record<Route['name'], string>>} */ ({ spaces: '.nav-spaces', settings: '.nav-settings' })[r.name] || '.nav-threads');
  navCurrent?.setAttribute('aria-current', 'page');
  const { main } = app.els;
  const seq = (app.renderSeq = (app.renderSeq || 0) + 1);

  if (r.name === 'thread') {
    replace(main, loadingView('Opening thread…'));
    // A thread that cannot be opened now (the server out of reach, or failing) says so with
    // Retry, and opens by itself as soon as it can (retry.js).
    const failed = h('section', { class: 'notice thread-failed', 'aria-label': 'Thread' });
    app.loading = keepTrying(async () => {
      /** @type {Thread} */
      const thread = await getJson(route('threads', r.id));
      if (seq === app.renderSeq) showThread(thread, r, { afterFailure: failed.isConnected });
    }, {
      onError: (e, attempt) => {
        if (seq !== app.renderSeq || e.status === 401) return false;
        if (e.status === 404) {
          document.title = 'Not found · ferry';
          replace(main, threadNotFound(r.id));
          return false;
        }
        document.title = 'Thread not opened · ferry';
        if (!failed.isConnected) replace(main, failed);
        showFailure(failed, { message: 'The thread could not be opened', error: e, attempt });
        return undefined;
      },
    });
    return;
  }
  if (r.name === 'spaces') {
    document.title = r.space ? `${r.space} · Spaces · ferry` : 'Spaces · ferry';
    const view = new SpacesView({ sub: /** @type {import('./auth.js').Claims} */ (app.claims).sub, space: r.space, navigate, preview: /** @type {PreviewPanel} */ (app.preview) });
    app.view = view;
    replace(main, view.el);
    if (!r.space) /** @type {HTMLElement | null} */ (main.querySelector('#space-name'))?.focus();
    else /** @type {HTMLElement | null} */ (main.querySelector('#spaces-title'))?.focus();
    return;
  }
  if (r.name === 'settings') {
    document.title = 'Settings · ferry';
    replace(main, settingsView(/** @type {import('./auth.js').Claims} */ (app.claims).sub));
    /** @type {HTMLElement | null} */ (main.querySelector('#settings-title'))?.focus();
    return;
  }
  if (r.name === 'missing') {
    document.title = 'Not found · ferry';
    replace(main, h('section', { class: 'notice' },
      h('h1', { text: 'Page not found' }),
      h('p', {}, h('a', { href: '/', 'data-nav': '', text: 'Back to your threads' }))));
    return;
  }
  document.title = 'ferry';
  replace(main, homeView());
}

/**
 * Shows a thread that was read: its view in the main area, and its link in the sidebar.
 * `afterFailure`: it opens after its failure was shown, by Retry or by itself.
 * @param {Thread} thread
 * @param {Extract<Route, { name: 'thread' }>} r
 * @param {{ afterFailure?: boolean }} [options]
 */
function showThread(thread, r, { afterFailure = false } = {}) {
  const { main } = app.els;
  if (!app.threads.some((t) => t.id === thread.id)) {
    app.threads = withThread(app.threads, thread);
    renderThreadList();
  }
  const view = new ThreadView(thread, {
    preview: /** @type {PreviewPanel} */ (app.preview),
    onNotFound: () => replace(main, threadNotFound(r.id)),
    onRenamed: (renamed) => {
      app.threads = app.threads.map((t) => (t.id === renamed.id ? { ...t, title: renamed.title } : t));
      renderThreadList();
      document.title = `${renamed.title || 'Untitled thread'} · ferry`;
    },
    onDeleted: (deleted) => {
      app.threads = app.threads.filter((t) => t.id !== deleted.id);
      announce(`Thread ${deleted.title || 'Untitled thread'} deleted`);
      navigate('/');
    },
  });
  app.view = view;
  document.title = `${thread.title || 'Untitled thread'} · ferry`;
  // The message box takes the focus; when the thread opens after a failure, only if the focus
  // was on Retry or nowhere: one who moved on to the sidebar meanwhile keeps their place.
  const focusHere = !afterFailure || main.contains(document.activeElement) || document.activeElement === document.body;
  replace(main, view.el);
  view.start();
  if (focusHere) view.composer.focus();
}

function homeView() {
  return h('section', { class: 'home', 'aria-labelledby': 'home-title' },
    h('h1', { id: 'home-title', text: 'Files between you and your agents' }),
    h('p', { text: 'A thread is a conversation with an agent. Attach files for it to work on; the files it publishes come back as cards you can preview and download.' }),
    h('ol', { class: 'steps' },
      h('li', {}, h('strong', { text: 'Start a thread' }), ' with ', h('strong', { text: 'New thread' }), ' and write your first message: the thread takes its name from it.'),
      h('li', {}, h('strong', { text: 'Connect your agent' }), ' to it: the thread’s ', h('strong', { text: 'Connect agent' }), ' button gives it a token and the address to reach ferry.'),
      h('li', {}, h('strong', { text: 'Exchange files' }), ': drop files into the thread; click a card the agent publishes to preview it.')),
    h('p', {}, 'Your agents can also keep notes and files for you in ', h('a', { href: '/spaces', 'data-nav': '', text: 'Spaces' }), '.'));
}

function checkToken() {
  const state = tokenState();
  if (state.state !== 'ok') {
    signInScreen(state.state);
    return false;
  }
  return true;
}

function scheduleExpiry() {
  clearTimeout(app.expiryTimer);
  const exp = app.claims?.exp;
  if (typeof exp !== 'number') return;
  const ms = exp * 1000 - Date.now();
  // setTimeout cannot wait longer than ~24.8 days; check again then.
  app.expiryTimer = setTimeout(() => {
    if (tokenState().state === 'expired') signInScreen('expired');
    else scheduleExpiry();
  }, Math.min(Math.max(ms, 0) + 500, 2 ** 31 - 1));
}

function boot() {
  const state = tokenState();
  if (state.state !== 'ok') {
    signInScreen(state.state);
    return;
  }
  app.claims = state.claims;
  app.threads = [];
  app.threadsLoaded = false;
  app.found = null;
  app.search = new ThreadSearch((query, threads) => {
    app.found = { query, threads: threads || [], failed: !threads };
    if (query === app.els.search?.value.trim()) renderThreadList();
  });
  buildShell();
  scheduleExpiry();
  loadThreads();
  followThreads();
  render();
}

// Links inside the app change the route without reloading the page.
document.addEventListener('click', (e) => {
  /** @type {HTMLAnchorElement | null} */
  const a = e.target instanceof Element ? e.target.closest('a[data-nav]') : null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, window.location.href);
  if (url.origin !== window.location.origin) return;
  e.preventDefault();
  navigate(url.pathname);
});
window.addEventListener('popstate', () => {
  if (getToken()) render();
});
onUnauthenticated((error) => {
  const state = tokenState();
  signInScreen(state.state === 'expired' ? 'expired' : 'rejected', error.message);
});
window.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && root.classList.contains('sidebar-open') && !app.preview?.isOpen) {
    toggleSidebar(false);
    app.els.menu?.focus();
  }
});

// A sign-in link opened in a tab already on this page only changes the fragment.
window.addEventListener('hashchange', () => {
  if (adoptTokenFromLocation()) {
    app.view?.destroy?.();
    app.view = null;
    boot();
  }
});

adoptTokenFromLocation();
boot();
