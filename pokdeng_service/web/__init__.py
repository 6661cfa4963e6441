"""The dispute page and the in-browser verifier (docs/dispute.md).

* ``model``: what the page shows, built from a round's events (and its bundle, once it is closed):
  the table as a person sees it, the headline, the timeline step by step, the seeds;
* ``describe``: each event in words, as text and card faces (never markup);
* ``render``: the pages, rendered with Jinja2 (every value escaped), with the verifier's JavaScript
  (``static/*.js``, WebCrypto) and the style sheet inlined, so that a page is one file that works
  offline: ``dispute_page`` (``pokdeng replay ROUND --html``) and ``verifier_page`` (``pokdeng
  verifier-page``: any bundle file, checked in the browser).

May import: ``pokdeng_core``, ``audit`` and what lies below it; the CLI imports this.
"""

from __future__ import annotations

from pokdeng_service.web.render import dispute_page, verifier_page

__all__ = ["dispute_page", "verifier_page"]
