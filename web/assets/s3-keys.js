// S3 access: the endpoint to paste into an S3 tool, and the person's access keys
// (GET/POST/DELETE /api/s3/keys). A new key's secret is shown once, in a field to copy (with a
// boto3 example for developers); the list never has secrets. Revoking asks first, in the page: tools using the key stop working at once.
import { h, replace, announce, developerDetails } from './dom.js';
import { icon } from './icons.js';
import { formatDateTime } from './format.js';
import { route, getJson, sendJson, request } from './api.js';
import { confirmDialog } from './confirm.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';

/**
 * A read-only field with a Copy button.
 * @param {string} id
 * @param {string} label
 * @param {string} value
 * @returns {[HTMLLabelElement, HTMLDivElement]}
 */
function copyField(id, label, value) {
  const field = h('input', { id, class: 'input mono', readonly: true, value });
  const copy = h('button', {
    type: 'button', class: 'btn', 'aria-label': `Copy ${label}`,
    onclick: async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(value);
        // The button was made with its label, below.
        /** @type {HTMLSpanElement} */ (copy.querySelector('.label')).textContent = 'Copied';
      } catch {
        /** @type {HTMLSpanElement} */ (copy.querySelector('.label')).textContent = 'Press Ctrl+C';
      }
    },
  }, h('span', { class: 'label', text: 'Copy' }));
  return [h('label', { for: id, class: 'field-label', text: label }), h('div', { class: 'field-row' }, field, copy)];
}

export class S3KeysPanel {
  constructor() {
    this.endpoint = `${window.location.origin}/s3`;
    this.list = h('ul', { class: 's3-keys', 'aria-label': 'Your S3 access keys' });
    this.created = h('div', { class: 's3-created', 'aria-live': 'polite' });
    this.error = h('p', { class: 'form-error', role: 'alert' });
    this.error.hidden = true;
    this.createButton = h('button', {
      type: 'button', class: 'btn btn-primary', onclick: () => this.create(),
    }, icon('plus'), h('span', { class: 'label', text: 'Create an access key' }));
    this.el = h('section', { class: 's3-access', 'aria-labelledby': 's3-title' },
      h('h2', { id: 's3-title', class: 'section-title', text: 'S3 access' }),
      h('p', { class: 'page-sub', text: 'File tools that speak S3, such as rclone, Cyberduck or the AWS command line, can open your spaces: give the tool this address and an access key, and each space shows as a bucket. A key acts as you, so keep its secret to yourself.' }),
      ...copyField('s3-endpoint', 'Endpoint URL', this.endpoint),
      developerDetails(h('p', { text: 'Path-style addressing, region us-east-1, signature version 4. Buckets are your spaces; keys are their files’ paths.' })),
      this.createButton, this.error, this.created, this.list);
    this.refresh();
  }

  /**
   * Lists the keys. A failure says so in the list, with Retry, and is tried again by itself
   * (retry.js) while the settings page is shown. Resolves once the list is shown or has failed.
   * @returns {Promise<void>}
   */
  refresh() {
    this.retry?.stop();
    return new Promise((resolve) => {
      this.retry = keepTrying(async () => {
        /** @type {AccessKeyList} */
        const { keys } = await getJson(route('s3', 'keys'));
        showKeepingFocus(this.list, () => this.showKeys(keys || []), () => this.createButton);
        resolve(undefined);
      }, {
        onError: (e, attempt) => {
          resolve(undefined);
          // The settings page was left: nothing to show it in, no reason to keep trying.
          if (!this.el.isConnected) return false;
          showFailure(this.list, { message: 'The keys could not be listed', error: e, attempt, tag: 'li', compact: true });
          return undefined;
        },
      });
    });
  }

  /** @param {AccessKey[]} keys */
  showKeys(keys) {
    if (!keys.length) {
      replace(this.list, h('li', { class: 'empty', text: 'No access keys yet.' }));
      return;
    }
    replace(this.list, keys.map((key) => h('li', { class: 's3-key', dataset: { key: key.accessKeyId } },
      h('span', { class: 'mono', text: key.accessKeyId }),
      h('span', { class: 'tree-meta', text: `created ${formatDateTime(key.createdAt)}` }),
      h('button', {
        type: 'button', class: 'btn btn-small', 'aria-label': `Revoke ${key.accessKeyId}`,
        onclick: (e) => this.revoke(key.accessKeyId, e.currentTarget),
      }, h('span', { class: 'label', text: 'Revoke' })))));
  }

  async create() {
    this.createButton.disabled = true;
    this.error.hidden = true;
    try {
      /** @type {AccessKey} */
      const key = await sendJson('POST', route('s3', 'keys'), {});
      replace(this.created,
        h('p', { class: 'field-help', text: 'Copy the secret now: it is shown only this once.' }),
        ...copyField('s3-key-id', 'Access key ID', key.accessKeyId),
        // The answer that makes a key is the one that has its secret.
        ...copyField('s3-secret', 'Secret access key', /** @type {string} */ (key.secretAccessKey)),
        developerDetails(
          h('p', { text: 'With boto3:' }),
          h('pre', { class: 'snippet' }, [
            'import boto3',
            'from botocore.config import Config',
            `s3 = boto3.client("s3", endpoint_url="${this.endpoint}",`,
            `    aws_access_key_id="${key.accessKeyId}", aws_secret_access_key="<the secret above>",`,
            '    region_name="us-east-1",',
            '    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))',
          ].join('\n'))));
      /** @type {HTMLInputElement} */ (this.created.querySelector('#s3-secret')).select();
      announce('Access key created; copy its secret now');
      await this.refresh();
    } catch (e) {
      this.error.textContent = `No key was created: ${/** @type {import('./api.js').Failure} */ (e).message}`;
      this.error.hidden = false;
    } finally {
      this.createButton.disabled = false;
    }
  }

  /**
   * Asks before revoking the key, then revokes it.
   * @param {string} accessKeyId
   * @param {HTMLElement} opener Gets the focus back when the dialog closes.
   */
  revoke(accessKeyId, opener) {
    this.error.hidden = true;
    confirmDialog({
      title: `Revoke ${accessKeyId}?`,
      text: 'Tools using this key stop working at once. This cannot be undone; you can create a new key.',
      action: 'Revoke key',
      failure: `${accessKeyId} was not revoked`,
      run: () => request(route('s3', 'keys', accessKeyId), { method: 'DELETE' }),
      done: () => {
        announce(`${accessKeyId} revoked`);
        if (this.created.textContent.includes(accessKeyId)) replace(this.created);
        this.refresh();
        this.createButton.focus();
      },
      opener,
    });
  }
}
