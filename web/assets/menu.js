// A menu button (the WAI-ARIA menu button pattern): one button that opens a short list of
// actions, for a narrow screen where the actions' own buttons would squeeze what they sit
// beside. The button says aria-haspopup="menu" and aria-expanded; opening moves the focus to the
// first item, the arrow keys, Home and End move it between items, Enter or a click runs one,
// and Escape, Tab or a click elsewhere closes the menu (Escape gives the focus back).
import { h } from './dom.js';
import { icon } from './icons.js';

let menuCounter = 0;

/**
 * @typedef {object} MenuItem
 * @property {string} label What the item says.
 * @property {import('./icons.js').IconName} iconName Its icon.
 * @property {string} [className] A class of its own (tests and styles find it by).
 * @property {boolean} [danger] Destroys something: shown in the danger colour.
 * @property {(opener: HTMLButtonElement) => void} run Runs the action; `opener` is the menu button,
 *   where a dialog the action opens gives the focus back.
 */

/**
 * A menu button and its menu, in one element.
 * @param {{ label: string, className?: string, items: MenuItem[] }} options
 */
export function menuButton({ label, className = '', items }) {
  const id = `menu-${++menuCounter}`;
  const button = h('button', {
    type: 'button', class: 'btn btn-small btn-icon menu-button', id: `${id}-button`,
    'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-controls': id, 'aria-label': label, title: label,
  }, icon('more'));
  const entries = items.map((item) => h('button', {
    type: 'button', role: 'menuitem', tabindex: '-1',
    class: `menu-item${item.danger ? ' menu-item-danger' : ''}${item.className ? ` ${item.className}` : ''}`,
    onclick: () => {
      close(false);
      // The opener keeps the focus until a dialog the action opens takes it.
      button.focus();
      item.run(button);
    },
  }, icon(item.iconName), h('span', { text: item.label })));
  const list = h('div', { class: 'menu-list', role: 'menu', id, 'aria-labelledby': `${id}-button`, hidden: true }, entries);
  const el = h('div', { class: `menu ${className}`.trim() }, button, list);

  const isOpen = () => button.getAttribute('aria-expanded') === 'true';
  const focusItem = (/** @type {number} */ index) => entries[(index + entries.length) % entries.length]?.focus();

  function open(first = true) {
    list.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    focusItem(first ? 0 : entries.length - 1);
    document.addEventListener('pointerdown', outside, true);
  }

  /** @param {boolean} giveFocusBack */
  function close(giveFocusBack) {
    if (!isOpen()) return;
    list.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', outside, true);
    if (giveFocusBack) button.focus();
  }

  /** @param {Event} e */
  function outside(e) {
    if (!el.contains(/** @type {Node} */ (e.target))) close(false);
  }

  button.addEventListener('click', () => (isOpen() ? close(true) : open()));
  button.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      open(e.key === 'ArrowDown');
    }
  });
  list.addEventListener('keydown', (e) => {
    const index = entries.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
    const moves = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: entries.length - 1 };
    if (e.key in moves) {
      e.preventDefault();
      focusItem(moves[/** @type {keyof typeof moves} */ (e.key)]);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation(); // the menu's Escape, not the page's (a panel behind it stays open)
      close(true);
    } else if (e.key === 'Tab') {
      close(false);
    } else if (e.key.length === 1 && /\S/.test(e.key)) {
      // A letter moves to the next item that starts with it, as native menus do.
      const letter = e.key.toLowerCase();
      const order = entries.slice(index + 1).concat(entries.slice(0, index + 1));
      order.find((item) => item.textContent?.trim().toLowerCase().startsWith(letter))?.focus();
    }
  });
  return { el, button, close: () => close(false) };
}
