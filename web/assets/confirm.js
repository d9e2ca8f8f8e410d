// Dialogs in the page, never a browser prompt: asking before something that cannot be undone
// (deleting a thread, a file or a space, revoking a key), with the safe choice (Cancel) focused,
// and asking for a name (a new folder), with the field focused. The action runs from the dialog;
// if it fails the dialog stays open and says why.
import { h } from './dom.js';
import { icon } from './icons.js';

let dialogCounter = 0;

/** A name refused before anything is sent: its message is the whole sentence shown. */
class NameProblem extends Error {}

/**
 * @typedef {object} ActionDialog
 * @property {string} title The question, as the dialog's heading.
 * @property {string} text What goes with it.
 * @property {string} action The label of the button that does it.
 * @property {string} failure Begins the sentence shown if `run()` throws.
 * @property {() => Promise<unknown>} run Does it; the dialog closes once it succeeds.
 * @property {() => void} [done] Called after `run()` succeeded and the dialog closed.
 * @property {HTMLElement} [opener] Gets the focus back when the dialog closes.
 */

/**
 * A modal dialog around a form: the heading, the sentence, `fields`, an error line, Cancel and
 * the action's button (its submit button, so Enter in a field runs it).
 * @param {ActionDialog & { n: number, fields?: Node[], iconName: import('./icons.js').IconName, danger: boolean }} options
 */
function actionDialog({ n, title, text, fields = [], action, iconName, danger, failure, run, done, opener }) {
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: danger ? 'btn btn-danger' : 'btn btn-primary' },
    icon(iconName), h('span', { class: 'label', text: action }));
  let succeeded = false;
  const dialog = h('dialog', {
    class: 'dialog dialog-small', 'aria-labelledby': `dialog-title-${n}`, 'aria-describedby': `dialog-text-${n}`,
  },
  h('form', {
    onsubmit: async (e) => {
      e.preventDefault();
      if (submit.disabled) return;
      submit.disabled = true;
      error.hidden = true;
      try {
        await run();
        succeeded = true;
        dialog.close();
      } catch (err) {
        error.textContent = err instanceof NameProblem ? err.message : `${failure}: ${/** @type {import('./api.js').Failure} */ (err).message}`;
        error.hidden = false;
        submit.disabled = false;
      }
    },
  },
  h('header', { class: 'dialog-header' },
    h('h2', { id: `dialog-title-${n}`, text: title }),
    h('button', { type: 'button', class: 'btn btn-icon', 'aria-label': 'Close', onclick: () => dialog.close() }, icon('close'))),
  h('p', { id: `dialog-text-${n}`, text }),
  fields,
  error,
  h('div', { class: 'dialog-actions' },
    h('button', { type: 'button', class: 'btn dialog-cancel', text: 'Cancel', onclick: () => dialog.close() }),
    submit)));
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener?.isConnected) opener.focus();
    if (succeeded) done?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

/**
 * Asks before an action that cannot be undone; Cancel has the focus.
 * @param {ActionDialog} options
 */
export function confirmDialog(options) {
  const dialog = actionDialog({ ...options, n: ++dialogCounter, iconName: 'trash', danger: true });
  /** @type {HTMLElement} */ (dialog.querySelector('.dialog-cancel')).focus();
  return dialog;
}

/**
 * Asks for a name, then runs `run(name)` with it, trimmed. `label` names the field; `check(name)`
 * answers why a name cannot be taken (shown as it is, nothing sent), or null.
 * @param {Omit<ActionDialog, 'run'> & { label: string, iconName: import('./icons.js').IconName,
 *   check: (name: string) => string | null, run: (name: string) => Promise<unknown> }} options
 */
export function nameDialog({ label, check, run, ...options }) {
  const n = ++dialogCounter;
  const field = h('input', {
    id: `dialog-name-${n}`, class: 'input', name: 'name', autocomplete: 'off', spellcheck: 'false',
  });
  const dialog = actionDialog({
    ...options,
    n,
    danger: false,
    fields: [h('label', { for: field.id, class: 'field-label', text: label }), h('div', { class: 'field-row' }, field)],
    run: () => {
      const name = field.value.trim();
      const problem = check(name);
      if (problem) return Promise.reject(new NameProblem(problem));
      return run(name);
    },
  });
  field.focus();
  return dialog;
}
