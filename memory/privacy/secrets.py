"""Vendor keys, private-key blocks, JWTs and random-looking tokens, found by `detect-secrets`.

`detect-secrets` keeps the prefixes and shapes of vendors' credentials up to date (AWS,
GitHub, GitLab, Slack, Stripe, SendGrid, Twilio, npm, PyPI, OpenAI, ...). Its plugins are
called in-process on the string: `analyze_string` yields the secret values, never a span, so
each value is located in the text here. Nothing is verified against a vendor (`verify` would
go online) and no baseline or settings file is read.

Two plugins are read more strictly than in a code scan, because chat is not code:

- the private-key plugin names only the `BEGIN ... PRIVATE KEY` line; the whole block, up to
  its `END` line (or the end of the text when the paste was cut), is what must go;
- the base64 high-entropy plugin looks inside quotes only; here any unquoted run of 24+
  base64 characters mixing upper case, lower case and digits (and not in a link's path) is
  measured with the plugin's own entropy and its default limit (4.5 bits a character, so
  random tokens of about 28 characters and more). Hex strings are left alone (commit hashes, UUIDs);
  a hex key named as a key is caught by the keyword rules of `memory.privacy.screen`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = ["vendor_secret_spans"]

# The keyword plugin reads code (`password = "..."`) and the public-IP plugin skips private
# ranges; `memory.privacy.screen` has its own rules for both in prose.
_PLUGIN_TYPES: tuple[type[BasePlugin], ...] = (
    ArtifactoryDetector, AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector,
    CloudantDetector, DiscordBotTokenDetector, GitHubTokenDetector, GitLabTokenDetector,
    IbmCloudIamDetector, IbmCosHmacDetector, JwtTokenDetector, MailchimpDetector, NpmDetector,
    OpenAIDetector, PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector,
    SoftlayerDetector, SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector,
    TwilioKeyDetector,
)  # fmt: skip

# Every credential the plugins know holds a run of 16+ token characters, or names a key
# block ("PRIVATE KEY", "PuTTY-User-Key-File"); most messages have neither and skip them all.
_WORTH_SCANNING = re.compile(r"[A-Za-z0-9_\-+/=.:@]{16,}|PRIVATE KEY|PuTTY")
_CONTEXT = 64  # characters scanned on each side of a long token
_BLOCK_END = re.compile(r"-----END [A-Z0-9 ]*-----|\Z")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{24,}(?![A-Za-z0-9+/=_-])")
_MIXED = re.compile(r"(?=[^A-Z]*[A-Z])(?=[^a-z]*[a-z])(?=[^0-9]*[0-9])")


@lru_cache(maxsize=1)
def _plugins() -> tuple[tuple[BasePlugin, ...], Base64HighEntropyString]:
    """Build the plugins once (their patterns compile at import)."""
    return tuple(t() for t in _PLUGIN_TYPES), Base64HighEntropyString()


def _block(text: str, start: int) -> tuple[int, int] | None:
    """Return the span of the key block whose BEGIN line holds `start`.

    A block opens with `-----BEGIN`; the words "BEGIN PRIVATE KEY" in a sentence are no key.
    """
    if text.startswith("PuTTY", start):
        return start, len(text)
    if not text.endswith("-----", 0, start):
        return None
    end = _BLOCK_END.search(text, start)
    return start - 5, end.end() if end else len(text)


def _windows(text: str) -> list[tuple[int, str]]:
    """Return the pieces of a text worth scanning, each with its offset.

    The plugins run on the characters around each long token or key-block word (their
    keyword forms, such as `AccountKey=` or `cloudant_password: `, sit right beside the
    value), not on the whole text: a pasted page has few such tokens, and every plugin
    pattern would otherwise walk all of it.
    """
    spans: list[list[int]] = []
    for m in _WORTH_SCANNING.finditer(text):
        start, end = max(0, m.start() - _CONTEXT), min(len(text), m.end() + _CONTEXT)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [(start, text[start:end]) for start, end in spans]


def vendor_secret_spans(text: str) -> list[tuple[int, int]]:
    """Return the spans of the credentials `detect-secrets` recognises in a text.

    Args:
        text: Any text (already folded to half-width by the caller).

    Returns:
        (start, end) spans, in no particular order; they may overlap.
    """
    plugins, entropy = _plugins()
    spans: list[tuple[int, int]] = []
    for offset, window in _windows(text):
        for plugin in plugins:
            for value in plugin.analyze_string(window):
                at = window.find(value) if value else -1
                while at >= 0:
                    if isinstance(plugin, PrivateKeyDetector):
                        block = _block(text, offset + at)
                        spans += [block] if block else []
                    else:
                        spans.append((offset + at, offset + at + len(value)))
                    at = window.find(value, at + len(value))
    for m in _TOKEN.finditer(text):
        token = m.group()
        if _MIXED.match(token) and entropy.calculate_shannon_entropy(token) > entropy.entropy_limit:
            word_start = max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
            if "://" not in text[word_start : m.start()]:  # a link's path is no key
                spans.append(m.span())
    return spans
