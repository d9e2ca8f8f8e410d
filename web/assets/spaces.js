// Spaces: the person's per-user storage. The page lists the person's spaces (GET /api/spaces)
// and opens one by name (a new name opens an empty space, which the first file or folder saved
// in it makes). A space's files are shown as a tree of folders, empty folders too; opening a file
// shows it in the preview panel, as the same file would be shown in a thread (preview.js). Files
// are uploaded into the space or any folder (create-only: a name already taken is refused, never
// overwritten); folders are made in the space or any folder, named in the page; files and whole
// spaces are deleted after an in-page confirmation. The space and each folder download as one
// zip (`?format=zip`, built by the server while it is sent). A list that cannot be read says so
// with Retry, and is read again by itself (retry.js).
import { h, replace, announce, developerDetails } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { formatSize, formatDateTime } from './format.js';
import { route, getJson, request } from './api.js';
import { confirmDialog, nameDialog } from './confirm.js';
import { downloadTo } from './download.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';
import { spaceFilePath as filePath } from './space-preview.js';

const NAME_RULE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;
// Over S3, `sandbox-{thread id}` names a thread's sandbox: no space takes such a name.
const RESERVED = /^sandbox-/;

/**
 * A folder of a space's tree: the folders in it by name, and its files.
 * @typedef {{ dirs: Map<string, TreeNode>, files: TreeFile[] }} TreeNode
 */

/** A file of the tree: its entry, and its name in its folder. @typedef {FileEntry & { name: string }} TreeFile */

/** A retry of a load (retry.js), stopped when the view goes. @typedef {{ stop: () => void }} Retrying */

/**
 * How many files, said in words: `1 file`, `8 files`.
 * @param {number} n
 * @returns {string}
 */
function filesText(n) {
  return `${n} file${n === 1 ? '' : 's'}`;
}

/**
 * A listing's entries (files and folders, each by its path in the space) → a tree:
 * { dirs: Map<name, node>, files: [] }. A folder is a node even when nothing is in it.
 * @param {FileEntry[]} entries
 * @returns {TreeNode}
 */
export function buildTree(entries) {
  /** @type {TreeNode} */
  const root = { dirs: new Map(), files: [] };
  const folder = (/** @type {string[]} */ names) => {
    let node = root;
    for (const name of names) {
      if (!node.dirs.has(name)) node.dirs.set(name, { dirs: new Map(), files: [] });
      // There, or set just above.
      node = /** @type {TreeNode} */ (node.dirs.get(name));
    }
    return node;
  };
  for (const entry of entries) {
    const parts = entry.path.split('/');
    if (entry.type === 'dir') folder(parts);
    else if (!entry.type || entry.type === 'file') folder(parts.slice(0, -1)).files.push({ ...entry, name: parts[parts.length - 1] });
  }
  return root;
}

/**
 * The files below a node of the tree, at any depth.
 * @param {TreeNode} node
 * @returns {number}
 */
function filesBelow(node) {
  let n = node.files.length;
  for (const child of node.dirs.values()) n += filesBelow(child);
  return n;
}

let treeCounter = 0;

/**
 * Unfolds (or folds) a folder of the tree by its toggle button.
 * @param {Element} toggle
 * @param {boolean} open
 */
function showFolder(toggle, open) {
  toggle.setAttribute('aria-expanded', String(open));
  // A toggle controls its folder's list, which is in the page with it (folderRow).
  /** @type {HTMLElement} */ (document.getElementById(/** @type {string} */ (toggle.getAttribute('aria-controls')))).hidden = !open;
}

/**
 * One folder's entries, its files and its folders, every page of them.
 * @param {string} space
 * @param {string} dir The folder's path; '' for the space's root.
 * @returns {Promise<FileEntry[]>}
 */
async function listFolder(space, dir) {
  /** @type {FileEntry[]} */
  const entries = [];
  /** @type {string | null} */
  let cursor = null;
  do {
    /** @type {SpaceFileList} */
    const page = await getJson(route('spaces', space, 'files'), { query: { dir: dir || null, limit: 10000, cursor } });
    entries.push(...(page.files || []));
    cursor = page.nextCursor || null;
  } while (cursor);
  return entries;
}

/**
 * Every file and folder of a space. A listing of the whole space at once names its files only,
 * so an empty folder would be missed: the space is read folder by folder instead, each level's
 * folders at the same time.
 * @param {string} space
 * @returns {Promise<FileEntry[]>}
 */
async function listSpace(space) {
  /** @type {FileEntry[]} */
  const entries = [];
  for (let level = ['']; level.length;) {
    const found = (await Promise.all(level.map((dir) => listFolder(space, dir)))).flat();
    entries.push(...found);
    level = found.filter((entry) => entry.type === 'dir').map((entry) => entry.path);
  }
  return entries;
}

export class SpacesView {
  /**
   * @param {{ sub: string, space?: string, navigate: (path: string) => void,
   *   preview: import('./preview.js').PreviewPanel }} options `sub` is who is signed in; `space`
   *   the space to open, if any.
   */
  constructor({ sub, space, navigate, preview }) {
    this.sub = sub;
    this.navigate = navigate;
    this.preview = preview;
    this.space = space || null;
    /** @type {{ recent: Retrying | null, list: Retrying | null }} */
    this.retries = { recent: null, list: null };
    // The line that says what happened in the space shown, which showFiles() makes before
    // anything writes to it: declared here for its type only.
    /** @type {HTMLParagraphElement} */
    this.status;
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
      h('p', { id: 'space-name-help', class: 'field-help', text: 'Open one of your spaces, or type a new name to start one: 1–64 letters, digits, dots, dashes or underscores, not starting with a dot or with “sandbox-”.' }),
      this.formError),
      this.recent,
      this.content,
      h('p', { class: 'field-help' }, 'File tools that speak S3, such as rclone or Cyberduck, can open your spaces too: see ',
        h('a', { href: '/settings', 'data-nav': '', text: 'Settings' }), '.'));
    this.renderRecent();
    if (space) this.load(space);
  }

  destroy() {
    this.retries.recent?.stop();
    this.retries.list?.stop();
  }

  /** @param {string} name */
  openByName(name) {
    if (!NAME_RULE.test(name) || name.startsWith('.') || RESERVED.test(name)) {
      this.formError.textContent = 'That is not a space name: use 1–64 letters, digits, dots, dashes or underscores, not starting with a dot or with “sandbox-”.';
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
      /** @type {SpaceList} */
      const { spaces } = await getJson(route('spaces'));
      showKeepingFocus(this.recent, () => this.showRecent(spaces || []), () => this.recent.querySelector('a') || this.input);
    }, {
      onError: (e, attempt) => {
        // Opening a space by name works meanwhile; the list says it could not be read.
        this.recent.hidden = false;
        if (!this.recent.querySelector('.recent-failure')) {
          replace(this.recent, h('h2', { class: 'section-title', text: 'Your spaces' }), h('div', { class: 'recent-failure' }));
        }
        // There, or made just above.
        showFailure(/** @type {HTMLElement} */ (this.recent.querySelector('.recent-failure')), { message: 'Your spaces could not be listed', error: e, attempt, compact: true });
        return undefined;
      },
    });
  }

  /** @param {Space[]} spaces */
  showRecent(spaces) {
    if (!spaces.length) {
      this.recent.hidden = false;
      replace(this.recent,
        h('h2', { class: 'section-title', text: 'Your spaces' }),
        h('p', { class: 'empty', text: 'You have no spaces yet. A space is storage of your own that your agents read and write: notes, drafts, files they keep for you across threads. Your agents make one when they first save a file in it; you can start one yourself by typing its name above, then uploading files or creating folders in it.' }),
        developerDetails(
          h('p', {}, 'Agents save a file in a space with the MCP tool ', h('code', { text: 'write_space_file' }),
            ', or over HTTP with ', h('code', { text: 'PUT /api/spaces/{space}/files/{path}' }), '.')));
      return;
    }
    this.recent.hidden = false;
    replace(this.recent,
      h('h2', { class: 'section-title', text: 'Your spaces' }),
      h('ul', { class: 'recent-list' }, spaces.map(({ name, files, size }) => h('li', {},
        h('a', {
          href: `/spaces/${encodeURIComponent(name)}`, 'data-nav': '', class: `space-link${name === this.space ? ' current' : ''}`,
          'aria-current': name === this.space ? 'page' : null,
          title: `${filesText(files)} · ${formatSize(size)}`,
        }, icon('folder'), h('span', { text: name }))))));
  }

  /**
   * Lists the space and shows its files; resolves once they are shown or have failed.
   * @param {string} space
   * @returns {Promise<void>}
   */
  load(space) {
    replace(this.content, h('p', { class: 'loading', role: 'status', text: `Loading ${space}…` }));
    this.retries.list?.stop();
    return new Promise((resolve) => {
      this.retries.list = keepTrying(async () => {
        const entries = await listSpace(space);
        showKeepingFocus(this.content, () => this.showFiles(space, entries), () => /** @type {HTMLElement | null} */ (this.content.querySelector('.space-title')));
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

  /**
   * @param {string} space
   * @param {FileEntry[]} entries
   */
  showFiles(space, entries) {
    const tree = buildTree(entries);
    const files = filesBelow(tree);
    this.status = h('p', { class: 'space-status', role: 'status' });
    // The heading names the space only; its buttons sit beside it, not in it, so that a screen
    // reader's list of headings does not read them out.
    const heading = h('div', { class: 'space-head' },
      h('h2', { class: 'section-title space-title', tabindex: '-1' }, icon('folder'), h('span', { class: 'space-title-name', text: space }),
        h('span', { class: 'count', text: filesText(files) })),
      h('div', { class: 'space-actions' },
        this.uploadButton(space, '', 'Upload files'),
        this.folderButton(space, '', 'New folder'),
        files ? this.zipButton(space, '', space, 'Download all') : null,
        h('button', {
          type: 'button', class: 'btn btn-small space-delete', 'aria-haspopup': 'dialog',
          onclick: (e) => this.deleteSpace(space, files, e.currentTarget),
        }, icon('trash'), h('span', { class: 'label', text: 'Delete space' }))));
    if (!entries.length) {
      replace(this.content, heading, this.status, h('p', { class: 'empty', text: 'Nothing is saved in this space yet. Upload files or create a folder; your agents can save files here too.' }));
      return;
    }
    replace(this.content, heading, this.status, h('ul', { class: 'tree', 'aria-label': `Files in ${space}` }, this.renderNode(space, tree, '')));
    announce(`${space}: ${filesText(files)}`);
  }

  /**
   * The rows of a folder of the tree: its folders, then its files.
   * @param {string} space
   * @param {TreeNode} node
   * @param {string} prefix The folder's path ('' for the space's root).
   * @returns {HTMLLIElement[]}
   */
  renderNode(space, node, prefix) {
    /** @type {HTMLLIElement[]} */
    const items = [];
    const dirs = [...node.dirs.keys()].sort((a, b) => a.localeCompare(b));
    for (const dir of dirs) {
      const path = prefix ? `${prefix}/${dir}` : dir;
      items.push(this.folderRow(space, path, dir, /** @type {TreeNode} */ (node.dirs.get(dir))));
    }
    for (const file of node.files.sort((a, b) => a.name.localeCompare(b.name))) {
      const open = h('button', {
        type: 'button', class: 'tree-file', 'aria-haspopup': 'dialog',
        'aria-label': `Open ${file.path}, ${formatSize(file.size)}`,
        onclick: () => this.openFile(space, file, open),
      },
      // The server leaves a file's contentType out rather than send null.
      fileIcon(file.name, /** @type {string | undefined} */ (file.contentType)),
      // The space between the name and the size is read, not drawn: so what the button shows,
      // "a.md 3 B", is words of its name, "Open ideas/a.md, 3 B", as a voice command says them.
      h('span', { class: 'tree-name', text: file.name }), ' ',
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
   * A folder of the tree: a button that folds and unfolds it (a disclosure: its buttons cannot
   * sit inside a <summary>, which is a control itself), the folder's own buttons, and what it
   * holds.
   * @param {string} space
   * @param {string} path
   * @param {string} name
   * @param {TreeNode} node
   * @returns {HTMLLIElement}
   */
  folderRow(space, path, name, node) {
    const inside = this.renderNode(space, node, path);
    const list = h('ul', { id: `tree-${++treeCounter}` }, inside.length ? inside : h('li', { class: 'tree-empty', text: 'Empty folder' }));
    const toggle = h('button', {
      type: 'button', class: 'tree-toggle', 'aria-expanded': 'true', 'aria-controls': list.id,
      onclick: () => showFolder(toggle, toggle.getAttribute('aria-expanded') !== 'true'),
    }, icon('chevron', 'icon chevron'), icon('folder'), h('span', { class: 'tree-name', text: name }));
    return h('li', { class: 'tree-dir', dataset: { path } },
      h('div', { class: 'tree-dir-row' }, toggle,
        h('span', { class: 'row-actions' },
          this.uploadButton(space, path),
          this.folderButton(space, path),
          filesBelow(node) ? this.zipButton(space, path, name) : null)),
      list);
  }

  /**
   * A button that uploads files into the folder `dir` of `space` (its root when empty). With
   * `label` it shows the label; without, only an icon (a folder's row in the tree).
   * @param {string} space
   * @param {string} dir
   * @param {string} [label]
   * @returns {HTMLSpanElement}
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
      onclick: () => input.click(),
    }, icon('upload'), label ? h('span', { class: 'label', text: label }) : null));
  }

  /**
   * A button that asks for a name and makes a folder of that name in the folder `dir` of `space`
   * (its root when empty). With `label` it shows the label; without, only an icon (a folder's row).
   * @param {string} space
   * @param {string} dir
   * @param {string} [label]
   * @returns {HTMLButtonElement}
   */
  folderButton(space, dir, label) {
    const where = dir || space;
    const button = h('button', {
      type: 'button', class: label ? 'btn btn-small new-folder' : 'btn btn-icon btn-small new-folder',
      'aria-label': `New folder in ${where}`, title: `New folder in ${where}`, 'aria-haspopup': 'dialog',
      onclick: () => this.askFolder(space, dir, button),
    }, icon('folder-plus'), label ? h('span', { class: 'label', text: label }) : null);
    return button;
  }

  /**
   * Asks for the new folder's name, makes it (POST …/folders: 201 made, 200 already there, 409
   * when a file has that name), then lists the space again and opens the folder.
   * @param {string} space
   * @param {string} dir
   * @param {HTMLElement} opener
   */
  askFolder(space, dir, opener) {
    /** @type {{ path: string, existed: boolean } | null} */
    let made = null;
    nameDialog({
      title: 'New folder',
      text: dir ? `It goes in ${dir}, in the space ${space}.` : `It goes in the space ${space}.`,
      label: 'Folder name',
      action: 'Create folder',
      iconName: 'folder-plus',
      failure: 'The folder was not created',
      check: (name) => (name ? null : 'Type a name for the folder.'),
      run: async (name) => {
        const path = dir ? `${dir}/${name}` : name;
        try {
          const response = await request(route('spaces', space, 'folders'), { method: 'POST', json: { path } });
          made = { path: /** @type {Folder} */ (await response.json()).path || path, existed: response.status === 200 };
        } catch (e) {
          if (/** @type {import('./api.js').Failure} */ (e).status === 409) throw new Error(`a file named ${name} is already there`);
          throw e;
        }
      },
      done: async () => {
        await this.load(space);
        this.renderRecent();
        // Done after run() succeeded, which made it.
        this.revealFolder(/** @type {{ path: string, existed: boolean }} */ (made));
      },
      opener,
    });
  }

  /**
   * Opens a folder of the tree (and those around it), moves the focus to it and says so.
   * @param {{ path: string, existed: boolean }} folder
   */
  revealFolder({ path, existed }) {
    const row = [.../** @type {NodeListOf<HTMLLIElement>} */ (this.content.querySelectorAll('li.tree-dir'))].find((li) => li.dataset.path === path);
    if (!row) return;
    // A folder's row has its toggle, and is in a list of its parent's.
    for (let li = /** @type {Element | null} */ (row); li; li = /** @type {HTMLElement} */ (li.parentElement).closest('li.tree-dir')) showFolder(/** @type {Element} */ (li.querySelector('.tree-toggle')), true);
    const toggle = /** @type {HTMLButtonElement} */ (row.querySelector('.tree-toggle'));
    toggle.scrollIntoView({ block: 'nearest' });
    toggle.focus();
    this.status.textContent = existed ? `The folder ${path} was already there.` : `Folder ${path} created.`;
    announce(this.status.textContent);
  }

  /**
   * Asks before deleting the space with every file and folder in it, then goes back to the list
   * of spaces. A space already gone (404) is what was asked for.
   * @param {string} space
   * @param {number} files How many files it holds.
   * @param {HTMLElement} opener
   */
  deleteSpace(space, files, opener) {
    confirmDialog({
      title: files ? `Delete space ${space} and its ${filesText(files)}?` : `Delete space ${space}?`,
      text: 'This cannot be undone: every file and folder in it is deleted, for you and for your agents.',
      action: 'Delete space',
      failure: `${space} was not deleted`,
      run: () => request(route('spaces', space), { method: 'DELETE' }).catch((/** @type {import('./api.js').Failure} */ e) => {
        if (e.status !== 404) throw e;
      }),
      done: () => {
        this.navigate('/spaces');
        announce(`Space ${space} deleted`);
      },
      opener,
    });
  }

  /**
   * Writes each file into the folder, create-only (`If-None-Match: *`): a name already taken is
   * reported, never overwritten. Then lists the space again and says what happened.
   * @param {string} space
   * @param {string} dir
   * @param {File[]} files
   */
  async upload(space, dir, files) {
    this.status.textContent = `Uploading ${files.length} file${files.length === 1 ? '' : 's'}…`;
    /** @type {string[]} */
    const failed = [];
    for (const file of files) {
      const path = dir ? `${dir}/${file.name}` : file.name;
      try {
        await request(filePath(space, path), {
          method: 'PUT', body: file,
          headers: { 'Content-Type': file.type || 'application/octet-stream', 'If-None-Match': '*' },
        });
      } catch (e) {
        failed.push(/** @type {import('./api.js').Failure} */ (e).status === 409 ? `${path} is already there (nothing replaced)` : `${path}: ${/** @type {import('./api.js').Failure} */ (e).message}`);
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

  /**
   * @param {string} space
   * @param {TreeFile} file
   * @param {HTMLElement} opener
   */
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
   * @param {string} space
   * @param {string} dir
   * @param {string} name
   * @param {string} [label]
   * @returns {HTMLButtonElement}
   */
  zipButton(space, dir, name, label) {
    const button = h('button', {
      type: 'button', class: label ? 'btn btn-small zip-download' : 'btn btn-icon btn-small zip-download',
      // A label shown is part of the name, so that a voice command saying it reaches the button.
      'aria-label': label ? `${label} of ${space} as a zip` : `Download ${dir} as a zip`,
      title: dir ? 'Download folder as a zip' : 'Download the space as a zip',
      onclick: () => {
        /** @type {{ format: string, dir?: string }} */
        const query = { format: 'zip' };
        if (dir) query.dir = dir;
        downloadTo(button, route('spaces', space, 'files'), `${name}.zip`, query)
          .then(() => announce(`${name}.zip downloaded`), () => {});
      },
    }, icon('download'), label ? h('span', { class: 'label', text: label }) : null);
    return button;
  }

  /**
   * Opens a file in the preview panel, which gives the focus back to its row when it closes.
   * @param {string} space
   * @param {TreeFile} file
   * @param {HTMLElement} opener
   */
  openFile(space, file, opener) {
    for (const b of this.content.querySelectorAll('.tree-file[aria-current]')) b.removeAttribute('aria-current');
    opener.setAttribute('aria-current', 'true');
    this.preview.openSpaceFile(space, file, opener);
  }
}
