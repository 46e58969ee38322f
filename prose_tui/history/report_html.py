"""A :class:`~prose_tui.history.report.Report` as one self-contained HTML page.

Jinja2 with autoescaping on: every string from the run (ids, trace text, error text, values,
paths) is HTML-escaped, in text and in attributes, so a run cannot add markup or scripts to
the page. The page has no scripts at all, one inline stylesheet (our own, from
``templates/report.css``) and a Content-Security-Policy that allows only that stylesheet, by
its sha256: nothing is loaded from the network or from disk, and an injected script or
style would not run even if escaping failed. Opens offline in any browser.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib.resources import files

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from prose_tui.history.report import Report, describe_seconds, size_text

__all__ = ["content_security_policy", "render_html"]


@lru_cache(maxsize=1)
def _css() -> str:
    return files("prose_tui.history").joinpath("templates/report.css").read_text(encoding="utf-8")


def content_security_policy(css: str) -> str:
    """The page's policy: nothing may load, no script may run; only the stylesheet whose
    text is ``css`` (by its sha256) applies."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; script-src 'none'; object-src 'none'; img-src 'none'; font-src 'none'; "
            f"connect-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("prose_tui.history", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True, default=True),
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["secs"] = describe_seconds
    env.filters["size"] = size_text
    return env


def render_html(report: Report) -> str:
    """The report as an HTML document (a ``str``; write it as UTF-8)."""
    css = _css()
    template = _environment().get_template("report.html.j2")
    return template.render(r=report, css=Markup(css), csp=content_security_policy(css))
