// Asking before something that cannot be undone (deleting a thread or a file, revoking a key):
// in the page, never a browser prompt, with the safe choice (Cancel) focused. The action runs
// from the dialog; if it fails the dialog stays open and says why.
import { h } from './dom.js';
import { icon } from './icons.js';

let dialogCounter = 0;

/**
 * Opens the dialog. `title` asks the question, `text` says what goes with it, `action` labels
 * the button that does it, `failure` begins the sentence shown if `run()` throws. `done()` is
 * called after `run()` succeeded and the dialog closed; focus returns to `opener`.
 */
export function confirmDialog({ title, text, action, failure, run, done, opener }) {
  const n = ++dialogCounter;
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const confirm = h('button', { type: 'button', class: 'btn btn-danger' },
    icon('trash'), h('span', { class: 'label', text: action }));
  const dialog = h('dialog', {
    class: 'dialog dialog-small', 'aria-labelledby': `confirm-title-${n}`, 'aria-describedby': `confirm-text-${n}`,
  },
  h('header', { class: 'dialog-header' },
    h('h2', { id: `confirm-title-${n}`, text: title }),
    h('button', { type: 'button', class: 'btn btn-icon', 'aria-label': 'Close', onclick: () => dialog.close() }, icon('close'))),
  h('p', { id: `confirm-text-${n}`, text }),
  error,
  h('div', { class: 'dialog-actions' },
    h('button', { type: 'button', class: 'btn', text: 'Cancel', onclick: () => dialog.close() }),
    confirm));
  let succeeded = false;
  confirm.addEventListener('click', async () => {
    confirm.disabled = true;
    error.hidden = true;
    try {
      await run();
      succeeded = true;
      dialog.close();
    } catch (e) {
      error.textContent = `${failure}: ${e.message}`;
      error.hidden = false;
      confirm.disabled = false;
    }
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener?.isConnected) opener.focus();
    if (succeeded) done?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  dialog.querySelector('.dialog-actions .btn').focus();
  return dialog;
}
