// The account area's only script (served at /console/static/console.js; the CSP allows no inline
// script): the copy button beside a new key. Everything else works without script.
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const field = document.getElementById(button.getAttribute('data-copy'));
  const status = button.parentElement.querySelector('.copied');
  try {
    await navigator.clipboard.writeText(field.value);
    if (status) status.textContent = 'Copied to the clipboard.';
  } catch {
    field.select();
    if (status) status.textContent = 'Selected: press Ctrl+C (or Cmd+C) to copy.';
  }
});
