// The page frame: one stylesheet and one script, both files served by the gateway (the CSP allows
// nothing inline), a skip link, a header with the signed-in user and a sign-out form.
import { html, type Html } from './html.ts';

export interface Frame {
  title: string;
  /** The signed-in user's name and the CSRF token for the sign-out form; null on the sign-in page. */
  user: { label: string; csrf: string } | null;
  body: Html;
}

export function page(frame: Frame): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${frame.title} · Tollgate</title>
<link rel="stylesheet" href="/console/static/console.css">
<script src="/console/static/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <a class="brand" href="/console/">Tollgate account area</a>
  ${frame.user
    ? html`<form method="post" action="/console/auth/logout" class="signout">
    <input type="hidden" name="_csrf" value="${frame.user.csrf}">
    <span class="who">Signed in as ${frame.user.label}</span>
    <button type="submit">Sign out</button>
  </form>`
    : ''}
</header>
<main id="main">
<h1>${frame.title}</h1>
${frame.body}
</main>
</body>
</html>
`.text;
}

export function notice(kind: 'error' | 'info', text: string): Html {
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;
}
