"""Keep pasted secrets out of every projection.

The log keeps what was said (only ``diarist redact`` rewrites it), but nothing derived from it
— journals, MEMORY.md, the search index, vectors, a prompt built from memory — may carry an
API key, a token or a password. :func:`scrub` replaces each one with ``[secret]``.
Detection is pattern-based: well-known key formats, ``password: …``-style assignments, and
long high-entropy tokens.
"""
from __future__ import annotations

import math
import re
from collections import Counter

MASK = "[secret]"

_PATTERNS = [
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}",          # OpenAI / Anthropic
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",                       # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",                        # GitLab
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",                   # Slack
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",                      # AWS access key id
    r"\bAIza[0-9A-Za-z_\-]{35}",                           # Google API key
    r"\bhf_[A-Za-z0-9]{30,}",                              # Hugging Face
    r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",      # Stripe
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
    r"(?i:\bbearer)\s+[A-Za-z0-9._\-+/=]{16,}",
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:[^\s@/]+@",     # credentials in a URL
]
# "password: x", "api_key = x", "my token is x", "passwd x" — the value is masked.
_ASSIGNED = re.compile(
    r"(?i)\b((?:api[_\- ]?key|secret(?:[_\- ]?key)?|access[_\- ]?token|auth[_\- ]?token|token|"
    r"password|passwd|passphrase|pwd|pin(?:[_\- ]?code)?)s?"
    r"\s*(?:is|was|=|:|->)\s*[\"']?)([^\s\"',;]{4,})"
)
_COMBINED = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")
_NOT_A_VALUE = {"is", "was", "the", "that", "this", "please", "here", "below", "reset", "for",
                "and", "with", "manager", "again", "change", "changed", "expired", "field"}


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _looks_random(token: str) -> bool:
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes >= 2 and _entropy(token) >= 3.5 and not token.isalpha()


def scrub(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[secret]``."""
    text = _COMBINED.sub(MASK, text)

    def assigned(match: re.Match[str]) -> str:
        value = match.group(2)
        if value.lower() in _NOT_A_VALUE or value == MASK:
            return match.group(0)
        return match.group(1) + MASK

    text = _ASSIGNED.sub(assigned, text)
    return _TOKEN.sub(lambda m: MASK if _looks_random(m.group(0)) else m.group(0), text)

