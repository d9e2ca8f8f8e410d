// Spaces: the person's per-user storage. The page lists the person's spaces (GET /api/spaces)
// and opens one by name (a space exists once something is saved in it, so a new one is opened
// by typing its name). A space's files are shown as a tree of folders; opening a file shows it in
// the preview panel, as the same file would be shown in a thread (preview.js). Files are
// uploaded into the space or any folder (create-only: a name already taken is refused, never
// overwritten) and deleted after an in-page confirmation. The space and each folder download as
// one zip (`?format=zip`, built by the server while it is sent). A list that cannot be read says
// so with Retry, and is read again by itself (retry.js).
import { h, replace, announce } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { formatSize, formatDateTime } from './format.js';
import { route, getJson, request } from './api.js';
import { confirmDialog } from './confirm.js';
import { downloadTo } from './download.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';
import { spaceFilePath as filePath } from './space-preview.js';

const NAME_RULE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;
// Over S3, `sandbox-{thread id}` names a thread's sandbox: no space takes such a name.
const RESERVED = /^sandbox-/;

/** Files (recursive listing) → a tree: { dirs: Map<name, node>, files: [] }. */
export function buildTree(files) {
  const root = { dirs: new Map(), files: [] };
  for (const f of files) {
    if (f.type && f.type !== 'file') continue;
    const parts = f.path.split('/');
    let node = root;
    for (const dir of parts.slice(0, -1)) {
      if (!node.dirs.has(dir)) node.dirs.set(dir, { dirs: new Map(), files: [] });
      node = node.dirs.get(dir);
    }
    node.files.push({ ...f, name: parts[parts.length - 1] });
  }
  return root;
}

export class SpacesView {
  constructor({ sub, space, navigate, preview }) {
    this.sub = sub;
    this.navigate = navigate;
    this.preview = preview;
    this.space = space || null;
    this.retries = { recent: null, list: null };
    this.input = h('input', {
      id: 'space-name', class: 'input', name: 'space', autocomplete: 'off', spellcheck: 'false',
      placeholder: 'e.g. notes', 'aria-describedby': 'space-name-help', value: space || '',
    });
    this.formError = h('p', { class: 'form-error', role: 'alert' });
    this.formError.hidden = true;
    this.recent = h('nav', { class: 'recent-spaces', 'aria-label': 'Your spaces' });
    this.content = h('div', { class: 'space-content' });
    this.el = h('section', { class: 'spaces', 'aria-labelledby': 'spaces-title' },
      h('header', { class: 'page-header' },
        h('h1', { id: 'spaces-title', tabindex: '-1', text: 'Spaces' }),
        h('p', { class: 'page-sub', text: 'Your own storage, shared with your agents: notes, drafts and files they keep for you.' })),
      h('form', {
        class: 'space-form', 'aria-label': 'Open a space',
        onsubmit: (e) => {
          e.preventDefault();
          this.openByName(this.input.value.trim());
        },
      },
      h('label', { for: 'space-name', class: 'field-label', text: 'Space name' }),
      h('div', { class: 'field-row' }, this.input,
        h('button', { type: 'submit', class: 'btn btn-primary', text: 'Open' })),
      h('p', { id: 'space-name-help', class: 'field-help', text: '1–64 letters, digits, dots, dashes or underscores, not starting with a dot or "sandbox-". A space exists once something is saved in it.' }),
      this.formError),
      this.recent,
      this.content,
      h('p', { class: 'field-help' }, 'S3 tools reach your spaces as buckets: create a key in ',
        h('a', { href: '/settings', 'data-nav': '', text: 'Settings' }), '.'));
    this.renderRecent();
    if (space) this.load(space);
  }

  destroy() {
    this.retries.recent?.stop();
    this.retries.list?.stop();
  }

  openByName(name) {
    if (!NAME_RULE.test(name) || name.startsWith('.') || RESERVED.test(name)) {
      this.formError.textContent = 'That is not a space name: use 1–64 letters, digits, dots, dashes or underscores, not starting with a dot or "sandbox-".';
      this.formError.hidden = false;
      this.input.focus();
      return;
    }
    this.formError.hidden = true;
    this.navigate(`/spaces/${encodeURIComponent(name)}`);
  }

  renderRecent() {
    this.retries.recent?.stop();
    this.retries.recent = keepTrying(async () => {
      const { spaces } = await getJson(route('spaces'));
      showKeepingFocus(this.recent, () => this.showRecent(spaces || []), () => this.recent.querySelector('a') || this.input);
    }, {
      onError: (e, attempt) => {
        // Opening a space by name works meanwhile; the list says it could not be read.
        this.recent.hidden = false;
        if (!this.recent.querySelector('.recent-failure')) {
          replace(this.recent, h('h2', { class: 'section-title', text: 'Your spaces' }), h('div', { class: 'recent-failure' }));
        }
        showFailure(this.recent.querySelector('.recent-failure'), { message: 'Your spaces could not be listed', error: e, attempt, compact: true });
        return undefined;
      },
    });
  }

  showRecent(spaces) {
    if (!spaces.length) {
      this.recent.hidden = false;
      replace(this.recent,
        h('h2', { class: 'section-title', text: 'Your spaces' }),
        h('p', { class: 'empty' }, 'You have no spaces yet. A space is storage of your own that your agents read and write: notes, drafts, files they keep for you across threads. An agent makes one when it first saves a file there (',
          h('code', { text: 'write_space_file' }), ' over MCP, or ', h('code', { text: 'PUT /api/spaces/{space}/files/…' }),
          '); you can also open one by name below and upload files into it.'));
      return;
    }
    this.recent.hidden = false;
    replace(this.recent,
      h('h2', { class: 'section-title', text: 'Your spaces' }),
      h('ul', { class: 'recent-list' }, spaces.map(({ name, files, size }) => h('li', {},
        h('a', {
          href: `/spaces/${encodeURIComponent(name)}`, 'data-nav': '', class: `space-link${name === this.space ? ' current' : ''}`,
          'aria-current': name === this.space ? 'page' : null,
          title: `${files} file${files === 1 ? '' : 's'} · ${formatSize(size)}`,
        }, icon('folder'), h('span', { text: name }))))));
  }

  load(space) {
    replace(this.content, h('p', { class: 'loading', role: 'status', text: `Loading ${space}…` }));
    this.retries.list?.stop();
    return new Promise((resolve) => {
      this.retries.list = keepTrying(async () => {
        const { files } = await getJson(route('spaces', space, 'files'), { query: { recursive: 'true', limit: 10000 } });
        showKeepingFocus(this.content, () => this.showFiles(space, files || []), () => this.content.querySelector('.space-title'));
        resolve(undefined);
      }, {
        onError: (e, attempt) => {
          showFailure(this.content, { message: 'The space could not be listed', error: e, attempt });
          resolve(undefined);
          return undefined;
        },
      });
    });
  }

  showFiles(space, list) {
    this.status = h('p', { class: 'space-status', role: 'status' });
    const heading = h('h2', { class: 'section-title space-title', tabindex: '-1' }, icon('folder'), h('span', { class: 'space-title-name', text: space }),
      h('span', { class: 'count', text: `${list.length} file${list.length === 1 ? '' : 's'}` }),
      h('span', { class: 'space-actions' },
        this.uploadButton(space, '', 'Upload files'),
        list.length ? this.zipButton(space, '', space, 'Download all') : null));
    if (!list.length) {
      replace(this.content, heading, this.status, h('p', { class: 'empty', text: 'Nothing is saved in this space yet. Your agents create it when they first save a file here; Upload files puts yours in.' }));
      return;
    }
    const tree = buildTree(list);
    replace(this.content, heading, this.status, h('ul', { class: 'tree', 'aria-label': `Files in ${space}` }, this.renderNode(space, tree, '')));
    announce(`${space}: ${list.length} files`);
  }

  renderNode(space, node, prefix) {
    const items = [];
    const dirs = [...node.dirs.keys()].sort((a, b) => a.localeCompare(b));
    for (const dir of dirs) {
      const path = prefix ? `${prefix}/${dir}` : dir;
      const details = h('details', { class: 'tree-dir', open: true },
        h('summary', {}, icon('folder'), h('span', { class: 'tree-name', text: dir }),
          h('span', { class: 'row-actions' }, this.uploadButton(space, path), this.zipButton(space, path, dir))),
        h('ul', {}, this.renderNode(space, node.dirs.get(dir), path)));
      items.push(h('li', { dataset: { path } }, details));
    }
    for (const file of node.files.sort((a, b) => a.name.localeCompare(b.name))) {
      const open = h('button', {
        type: 'button', class: 'tree-file', 'aria-haspopup': 'dialog',
        'aria-label': `Open ${file.path} (${formatSize(file.size)})`,
        onclick: () => this.openFile(space, file, open),
      },
      fileIcon(file.name, file.contentType),
      h('span', { class: 'tree-name', text: file.name }),
      h('span', { class: 'tree-meta', text: formatSize(file.size), title: file.updatedAt ? `Updated ${formatDateTime(file.updatedAt)}` : null }));
      const remove = h('button', {
        type: 'button', class: 'btn btn-icon btn-small row-delete',
        'aria-label': `Delete ${file.path}`, title: 'Delete',
        onclick: () => this.deleteFile(space, file, remove),
      }, icon('trash'));
      items.push(h('li', { class: 'tree-file-row', dataset: { path: file.path } }, open, remove));
    }
    return items;
  }

  /**
   * A button that uploads files into the folder `dir` of `space` (its root when empty). With
   * `label` it shows the label; without, only an icon (a folder's row in the tree).
   */
  uploadButton(space, dir, label) {
    const input = h('input', {
      type: 'file', multiple: true, hidden: true, tabindex: '-1', 'aria-hidden': 'true',
      onchange: () => {
        const files = Array.from(input.files || []);
        input.value = '';
        if (files.length) this.upload(space, dir, files);
      },
    });
    const where = dir || space;
    return h('span', { class: 'upload-into' }, input, h('button', {
      type: 'button', class: label ? 'btn btn-small space-upload' : 'btn btn-icon btn-small space-upload',
      'aria-label': `Upload files into ${where}`, title: `Upload files into ${where}`,
      onclick: (e) => {
        // Inside a folder's summary: choose files, do not fold the folder.
        e.preventDefault();
        e.stopPropagation();
        input.click();
      },
    }, icon('upload'), label ? h('span', { class: 'label', text: label }) : null));
  }

  /**
   * Writes each file into the folder, create-only (`If-None-Match: *`): a name already taken is
   * reported, never overwritten. Then lists the space again and says what happened.
   */
  async upload(space, dir, files) {
    this.status.textContent = `Uploading ${files.length} file${files.length === 1 ? '' : 's'}…`;
    const failed = [];
    for (const file of files) {
      const path = dir ? `${dir}/${file.name}` : file.name;
      try {
        await request(filePath(space, path), {
          method: 'PUT', body: file,
          headers: { 'Content-Type': file.type || 'application/octet-stream', 'If-None-Match': '*' },
        });
      } catch (e) {
        failed.push(e.status === 409 ? `${path} is already there (nothing replaced)` : `${path}: ${e.message}`);
      }
    }
    const done = files.length - failed.length;
    await this.load(space);
    this.renderRecent();
    const summary = `${done} of ${files.length} file${files.length === 1 ? '' : 's'} uploaded into ${dir || space}`;
    this.status.textContent = failed.length ? `${summary}. Not uploaded: ${failed.join('; ')}.` : `${summary}.`;
    this.status.classList.toggle('form-error', failed.length > 0);
    announce(this.status.textContent);
  }

  deleteFile(space, file, opener) {
    confirmDialog({
      title: `Delete ${file.path}?`,
      text: `It is removed from the space “${space}” for good, for you and your agents.`,
      action: 'Delete file',
      failure: `${file.path} was not deleted`,
      run: () => request(filePath(space, file.path), { method: 'DELETE' }),
      done: async () => {
        if (this.preview.isOpen && this.preview.file?.space === space && this.preview.file?.path === file.path) {
          this.preview.close();
        }
        await this.load(space);
        this.renderRecent();
        announce(`${file.path} deleted`);
        this.status.textContent = `${file.path} deleted.`;
      },
      opener,
    });
  }

  /**
   * A button that downloads the folder `dir` of `space` (its root when empty) as `name`.zip.
   * With `label` it shows the label; without, only an icon (a folder's row in the tree).
   */
  zipButton(space, dir, name, label) {
    const button = h('button', {
      type: 'button', class: label ? 'btn btn-small zip-download' : 'btn btn-icon btn-small zip-download',
      'aria-label': `Download ${dir || space} as a zip`, title: 'Download folder as a zip',
      onclick: (e) => {
        // Inside a folder's summary: download, do not fold the folder.
        e.preventDefault();
        e.stopPropagation();
        const query = { format: 'zip' };
        if (dir) query.dir = dir;
        downloadTo(button, route('spaces', space, 'files'), `${name}.zip`, query)
          .then(() => announce(`${name}.zip downloaded`), () => {});
      },
    }, icon('download'), label ? h('span', { class: 'label', text: label }) : null);
    return button;
  }

  /** Opens a file in the preview panel, which gives the focus back to its row when it closes. */
  openFile(space, file, opener) {
    for (const b of this.content.querySelectorAll('.tree-file[aria-current]')) b.removeAttribute('aria-current');
    opener.setAttribute('aria-current', 'true');
    this.preview.openSpaceFile(space, file, opener);
  }
}
