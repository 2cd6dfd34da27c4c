// Accessibility checks run inside a real page (no axe-core: these are the rules the account area
// promises, computed from the DOM and the browser's own styles), and keyboard helpers that move focus
// with page.keyboard only and read the focused element as the browser's accessibility tree names it.
import type { Page } from 'playwright-core';

/**
 * The page's defects, one readable line each (empty: none): a lang attribute; every form control
 * with a visible label, aria-label or aria-labelledby; every button and link named; every image and
 * chart with a text alternative, and every chart with its data as a table; one h1, no skipped levels.
 */
export function auditPage(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const text = (el: Element | null) => (el?.textContent ?? '').replace(/\s+/g, ' ').trim();
    const describe = (el: Element) => `<${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.getAttribute('name') ? ` name=${el.getAttribute('name')}` : ''}>`;
    // A label a sighted user can read: laid out bigger than the 1px of a screen-reader-only text.
    const seen = (el: Element) => {
      const box = el.getBoundingClientRect();
      return el.checkVisibility() && box.width > 1 && box.height > 1;
    };
    const labelledBy = (el: Element) =>
      (el.getAttribute('aria-labelledby') ?? '').split(/\s+/).filter(Boolean).map((id) => text(document.getElementById(id))).join(' ').trim();

    if (!document.documentElement.lang) problems.push('<html> has no lang');
    if (!document.title.trim()) problems.push('the page has no <title>');

    for (const control of document.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input:not([type=hidden]), select, textarea')) {
      const labels = [...(control.labels ?? [])].filter((label) => text(label) !== '');
      const named = labels.length > 0 || (control.getAttribute('aria-label') ?? '').trim() !== '' || labelledBy(control) !== '';
      if (!named) problems.push(`${describe(control)} has no label, aria-label or aria-labelledby`);
      else if (!labels.some(seen) && !labelledBy(control)) problems.push(`${describe(control)} has no visible label`);
    }
    for (const el of document.querySelectorAll('button, a[href], summary, [role=button]')) {
      const visible = text(el);
      const name = (el.getAttribute('aria-label') ?? '').trim() || labelledBy(el) || visible;
      if (!name) problems.push(`${describe(el)} has no accessible name`);
      // WCAG 2.5.3: a name that replaces the visible words must still contain them (speech users say what they see).
      else if (visible && !name.toLowerCase().includes(visible.toLowerCase())) problems.push(`${describe(el)} is named "${name}", which does not contain its visible text "${visible}"`);
    }

    for (const img of document.querySelectorAll('img')) if (!img.hasAttribute('alt')) problems.push(`${describe(img)} has no alt`);
    for (const svg of document.querySelectorAll('svg')) {
      if (svg.closest('[aria-hidden=true]')) continue;
      const name = (svg.getAttribute('aria-label') ?? '').trim() || labelledBy(svg) || text(svg.querySelector(':scope > title'));
      if (svg.getAttribute('role') !== 'img' || !name) problems.push(`an <svg> is neither aria-hidden nor an image with a name (role=${svg.getAttribute('role')}, name="${name}")`);
    }
    for (const chart of document.querySelectorAll('figure.chart')) {
      if (!text(chart.querySelector('figcaption'))) problems.push('a chart has no caption');
      const rows = chart.querySelectorAll('table tbody tr').length;
      const described = chart.querySelector('svg[aria-describedby]');
      if (rows === 0 && !described) problems.push(`the chart "${text(chart.querySelector('figcaption'))}" has neither a data table with rows nor an aria description`);
    }

    const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => ({ level: Number(h.tagName[1]), text: text(h) }));
    const h1s = headings.filter((h) => h.level === 1).length;
    if (h1s !== 1) problems.push(`${h1s} h1 headings (one expected)`);
    if (headings.length > 0 && headings[0].level !== 1) problems.push(`the first heading is h${headings[0].level} "${headings[0].text}"`);
    for (let i = 1; i < headings.length; i++) {
      if (headings[i].level > headings[i - 1].level + 1) problems.push(`h${headings[i - 1].level} "${headings[i - 1].text}" is followed by h${headings[i].level} "${headings[i].text}" (a level skipped)`);
    }
    return problems;
  });
}

/** The focused element as the accessibility tree shows it (`button "Copy"`), or '' when nothing is. */
export async function focused(page: Page): Promise<string> {
  const element = page.locator(':focus');
  if ((await element.count()) === 0) return '';
  // The first line is `- role "name": text` (or `- role: text` without a name): keep the role and name.
  const line = (await element.ariaSnapshot()).split('\n')[0].replace(/^- /, '');
  const named = /^[\w-]+ "(?:[^"\\]|\\.)*"/.exec(line);
  return named ? named[0] : line.replace(/:.*$/, '');
}

/** Presses Tab (Shift+Tab when `back`) until the focused element matches; fails naming every stop on the way. */
export async function tabTo(page: Page, target: RegExp, options: { back?: boolean; max?: number } = {}): Promise<void> {
  const stops: string[] = [];
  for (let i = 0; i < (options.max ?? 40); i++) {
    await page.keyboard.press(options.back ? 'Shift+Tab' : 'Tab');
    const now = await focused(page);
    if (target.test(now)) return;
    stops.push(now || '(nothing)');
  }
  throw new Error(`${target} was not reached with the keyboard; focus went to: ${stops.join(' → ')}`);
}

/**
 * Tabs through the whole page from its start and, for every element focus reaches, compares its
 * computed outline and box-shadow with what they were before anything had focus: the focused look must
 * differ and its outline must stand out from the background behind it (WCAG 1.4.11: 3:1). Also
 * checks that every focusable element is reached, and that each is on screen while it has focus (the
 * skip link). Returns the defects found.
 */
export async function auditFocus(page: Page): Promise<string[]> {
  await page.evaluate(() => {
    (document.activeElement as HTMLElement | null)?.blur();
    const look = (el: Element) => {
      const s = getComputedStyle(el);
      return { outline: `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}`, shadow: s.boxShadow };
    };
    const focusable = [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])')].filter(
      (el) => !(el as HTMLButtonElement).disabled && (el.checkVisibility() || el.classList.contains('skip')),
    );
    Object.assign(window, { a11yUnfocused: new Map(focusable.map((el) => [el, look(el)])), a11yReached: new Set<Element>(), a11yProblems: [] as string[] });
  });
  const max = (await page.evaluate(() => (window as any).a11yUnfocused.size as number)) * 4 + 10;
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const wrapped = await page.evaluate(() => {
      const w = window as any;
      const el = document.activeElement;
      if (!el || el === document.body) return w.a11yReached.size > 0;
      if (w.a11yReached.has(el)) return el !== [...w.a11yReached].at(-1); // a date field's parts keep focus on it
      w.a11yReached.add(el);
      const name = `<${el.tagName.toLowerCase()}> "${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}"`;
      const s = getComputedStyle(el);
      const before = w.a11yUnfocused.get(el);
      const outline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
      const shadow = s.boxShadow !== 'none';
      if (!el.matches(':focus-visible')) w.a11yProblems.push(`${name} is focused by the keyboard but not :focus-visible`);
      if (!outline && !shadow) w.a11yProblems.push(`${name} shows no outline or box-shadow when focused`);
      else if (before && before.outline === `${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}` && before.shadow === s.boxShadow) w.a11yProblems.push(`${name} looks the same focused and unfocused`);
      const box = el.getBoundingClientRect();
      if (box.right <= 0 || box.bottom <= 0 || box.left >= innerWidth || box.top >= innerHeight || box.width < 1) w.a11yProblems.push(`${name} is off screen while it has focus`);
      if (outline) {
        // The outline is drawn outside the element: against the nearest opaque background behind it.
        const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
        const luminance = ([r, g, b]: number[]) => {
          const lin = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
          return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
        };
        let behind = [255, 255, 255];
        for (let p = el.parentElement; p; p = p.parentElement) {
          const c = rgb(getComputedStyle(p).backgroundColor);
          if (c.length === 3 || (c.length === 4 && c[3] === 1)) {
            behind = c.slice(0, 3);
            break;
          }
        }
        const [a, b] = [luminance(rgb(s.outlineColor)), luminance(behind)];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < 3) w.a11yProblems.push(`${name}'s focus outline (${s.outlineColor}) has contrast ${ratio.toFixed(2)}:1 against rgb(${behind.join(', ')}) (3:1 needed)`);
      }
      return false;
    });
    if (wrapped) break;
  }
  return page.evaluate(() => {
    const w = window as any;
    const missed = [...w.a11yUnfocused.keys()].filter((el: Element) => !w.a11yReached.has(el));
    return [...w.a11yProblems, ...missed.map((el: Element) => `<${el.tagName.toLowerCase()}> "${(el.textContent ?? '').trim().slice(0, 40)}" is never reached with Tab`)];
  });
}
