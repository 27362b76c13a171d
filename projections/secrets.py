"""Keep pasted secrets out of everything derived from the log.

The log keeps what was said (only ``diarist redact`` rewrites it), but nothing derived from it
— journals, MEMORY.md, the search index, vectors, a prompt built from memory, a mining or
consolidation prompt, a log line — may carry an API key, a token or a password.
:func:`scrub` replaces each one with ``[secret]``; :func:`find` says where they are and what
kind (``diarist redact`` masks those spans in the log itself).

What is a secret (``tests/test_secrets.py`` has a positive and a negative case for each):

1. **Known formats** (:data:`FORMATS`), masked whole: private-key blocks (PEM: RSA, EC, DSA,
   OPENSSH, ENCRYPTED, PKCS#8; PGP ``PRIVATE KEY BLOCK``; an unterminated block to the end of
   the text), OpenAI (``sk-``, ``sk-proj-``) and Anthropic (``sk-ant-``) keys, GitHub
   (``ghp_ gho_ ghs_ ghu_ ghr_ github_pat_``), GitLab (``glpat-``), Slack tokens
   (``xox[abprseo]-``) and webhook URLs (``hooks.slack.com/services/…``), AWS access key ids
   (``AKIA``/``ASIA``…), Google (``AIza``), Hugging Face (``hf_``), Stripe secret and
   restricted keys (``sk_live_``, ``rk_live_``, ``…_test_``, ``whsec_``), npm (``npm_``),
   PyPI (``pypi-AgE…``), SendGrid (``SG.….…``), Groq (``gsk_``), Replicate (``r8_``),
   JWTs (``eyJ….eyJ….…``).
2. **Values in credentials' places**, the value masked and the name kept:
   ``Authorization: Bearer|Basic|Token …``, a bare ``Bearer …``, the password of a URL
   (``postgres://ann:[secret]@db:5432/app`` — user, host and database stay: they are what
   a person asks memory for).
3. **Assignments** ``NAME = value``, ``NAME: value``, ``NAME => value``: NAME is a password,
   passwd, passphrase, pwd, pin, secret, token, api key, access/secret/private key —
   alone or as the end of a longer name (``DB_PASSWORD``, ``POSTGRES_PASSWORD``,
   ``MYSQL_ROOT_PASSWORD``, ``aws_secret_access_key``, ``OPENAI_API_KEY``, ``dbPassword``,
   ``client_secret``, ``GITHUB_TOKEN``); a quoted value is masked whole. Not a value: a
   placeholder or a reference (``$DB_PASSWORD``, ``${…}``, ``<your key>``,
   ``os.environ[…]``, ``None``, ``***``, a path such as ``PWD=/home/ann``) or a plain word
   of prose (``secret: the cake is a lie``). ``tokens: 512`` and ``max_tokens=100`` are
   counts, not secrets (a plural or another suffix does not count).
4. **Prose**: "my password is hunter2", "the wifi password was Tr0ub4dor", "pin is 4821",
   "password for the router is hunter2" (a value of 4 characters or more that is not a
   common word), and "password hunter2" when the word after "password" has a digit or a
   symbol ("I forgot my password yesterday" and "password reset link" stay).
5. **Long random tokens**: 32+ characters of ``[A-Za-z0-9_+/-]`` (and ``=`` padding) that
   mix letters and digits, switch character class often, have high entropy and are not
   mostly words (an unknown provider's key). Decided: hex strings — git commits, sha256
   digests, UUIDs — are identifiers people talk about and stay, as do code identifiers,
   slugs, paths and anything inside a URL (a link is worth keeping; a credential in a URL
   is caught by rule 2 or 3).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

MASK = "[secret]"        # what a projection shows in a secret's place
REDACTED = "[redacted]"  # what ``diarist redact`` writes into the log in its place
_MASKS = {MASK.lower(), REDACTED.lower(), "[redacted", "[secret"}


@dataclass(frozen=True)
class Finding:
    kind: str   # what it is ("OpenAI key", "password", …); never the secret itself
    start: int
    end: int


# (kind, pattern): the whole match is the secret, or only the group named ``v``.
FORMATS: list[tuple[str, str]] = [
    ("private key",
     r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
     r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    ("Anthropic key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("OpenAI key", r"\bsk-(?=[A-Za-z_\-]{0,64}[0-9])[A-Za-z0-9_\-]{16,}"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("Slack token", r"\bxox[abprseo]-[A-Za-z0-9\-]{10,}"),
    ("Slack webhook", r"(?:\bhttps?://)?\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+"),
    ("AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("PyPI token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("SendGrid key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("Groq key", r"\bgsk_[A-Za-z0-9]{20,}"),
    ("Replicate token", r"\br8_[A-Za-z0-9]{20,}"),
    ("JWT", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("authorization header",
     r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?(?i:(?:bearer|basic|token|digest)\s+)?"
     r"(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)"),
    ("bearer token", r"(?i:\bbearer)\s+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)"),
    ("URL password", r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/@]*:(?P<v>[^\s/]+)@[^\s/@]+"),
]
# For each format, literals of which a match holds at least one, lower-cased: a text with none
# of them in its lower-cased form cannot match, and is not scanned (a substring test is ~30
# times cheaper than a pattern's scan; the 20 scans were most of what finding cost). The
# two case-blind patterns' needles have no i, k or s, which Unicode letters (İ, ı, K, ſ)
# match case-blind without lower-casing to them.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private key": ("private key",), "Anthropic key": ("sk-ant-",), "OpenAI key": ("sk-",),
    "GitHub token": ("gh",), "GitLab token": ("glpat-",), "Slack token": ("xox",),
    "Slack webhook": ("hooks.slack.com/",), "AWS access key id": ("akia", "asia", "abia", "acca"),
    "Google API key": ("aiza",), "Hugging Face token": ("hf_",),
    "Stripe key": ("_live_", "_test_", "whsec_"), "npm token": ("npm_",),
    "PyPI token": ("pypi-age",), "SendGrid key": ("sg.",), "Groq key": ("gsk_",),
    "Replicate token": ("r8_",), "JWT": ("eyj",), "authorization header": ("author",),
    "bearer token": ("bearer",), "URL password": ("://",),
}
_FORMATS = [(kind, re.compile(pattern)) for kind, pattern in FORMATS]
_NEEDLE_FORMAT = [(needle, n) for n, (kind, _pattern) in enumerate(FORMATS)
                  for needle in _NEEDLES[kind]]  # (literal, its format's index), flat

# The names whose values are secrets: alone, or ending a longer name (``DB_PASSWORD``,
# ``dbPassword``, ``aws_secret_access_key``). A password's value may be anything; a token's or
# a key's must look like one (8+ characters, not a code expression such as ``next(tokens)``).
_NAME = (r"(?<![\w.\-])(?:(?:[A-Za-z0-9]+[_.\-])+|[a-z0-9]+(?=[A-Z]))?"
         r"(?:(?P<pw>(?i:password|passwd|passphrase|passcode|pwd))|"
         r"(?P<key>(?i:secret|token|api[_\-]?key|access[_\-]?key|secret[_\-]?key"
         r"|private[_\-]?key)))"
         r"(?:[_\-]?(?i:key|token|secret))?")
_VALUE = r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|(?P<v>[^\s\"',;]+))"
_ASSIGNED = re.compile(_NAME + r"[\"']?\s*(?::=|=>|->|[=:])\s*" + _VALUE)
_PROSE_IS = re.compile(
    r"\b(?:(?i:password|passwd|passphrase|passcode|pin code|api key|access token|auth token"
    r"|api token|secret key)|PIN)\b(?:\s+(?i:for|to|of|on)\s+(?:(?i:the|my|our|your)\s+)?"
    r"[\w.\-@]+)?\s+(?i:is|was)\s+" + _VALUE)
_PROSE_BARE = re.compile(r"\b(?i:password|passwd|passphrase)\s+(?P<v>[^\s\"']+)")
_TRIGGERS = ("pass", "pwd", "pin", "secret", "token", "key")  # cheap test before the above
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/]{32,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|[a-z_]+$")  # attribute, identifier

_NOT_A_VALUE = set("""
a an the this that these those it its is was be been are were here there below above
my your our their his her me you we they i none null nil true false yes no n/a na undefined
required optional empty unset same different new old wrong correct incorrect invalid valid
expired weak strong long short too not still also just only saved stored set reset change
changed manager again field please and or for with in on at of to from by as into via
missing protected hidden secret password token key pin ok okay fine good bad
str string int integer bool boolean bytes text varchar char any object list dict
""".split())
_PLACEHOLDER = re.compile(r"^(?:[$%<{\[(~/*.]|os\.|process\.env|env\(|getenv|input\(|x{3,}$"
                          r"|(?:your|insert|enter|replace|example|dummy)[_\- ])", re.IGNORECASE)
_CALL = re.compile(r"[A-Za-z_][\w.]*\(")          # a value that is code: ``prompt(…)``
_WORD = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}")     # a piece of a slug or a path, not a key
_EDGE_PUNCT = ".,;:!?)]}>\"'`*_~"


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _class(ch: str) -> int:
    return 0 if ch.islower() else 1 if ch.isupper() else 2 if ch.isdigit() else 3


def _looks_random(token: str) -> bool:
    """A 32+ character run that reads as a key rather than a word, path or hash."""
    if _HEX.fullmatch(token) or not any(c.isdigit() for c in token):
        return False
    if not any(c.isalpha() for c in token):
        return False
    switches = sum(_class(a) != _class(b) for a, b in zip(token, token[1:], strict=False))
    if switches / len(token) < 0.3 or _entropy(token) < 3.5:
        return False
    pieces = re.split(r"[-_/.+=]+", token)  # a slug or a path is mostly words
    return sum(len(p) for p in pieces if _WORD.fullmatch(p)) < 0.6 * len(token)


def _in_url(text: str, start: int) -> bool:
    """Whether ``start`` lies in a URL (the word it is in has ``://`` before it)."""
    word_start = max(text.rfind(c, 0, start) for c in " \t\n<([\"'") + 1
    return "://" in text[word_start:start]


def _value(match: re.Match[str]) -> tuple[str, int, int, bool] | None:
    """(value, start, end, quoted) of an assignment or a sentence."""
    for group in ("dq", "sq", "v"):
        if match.group(group) is not None:
            return match.group(group), match.start(group), match.end(group), group != "v"
    return None


def _is_value(value: str, quoted: bool, minimum: int) -> bool:
    """Whether what follows a secret's name is a value, not prose or a reference to one."""
    word = value.strip(_EDGE_PUNCT)
    if not word or word.lower() in _MASKS or value.lower() in _MASKS:
        return False
    if len(word) < minimum or _PLACEHOLDER.match(value):
        return False
    return quoted or word.lower() not in _NOT_A_VALUE


def _assignments(text: str) -> list[Finding]:
    found = []
    for match in _ASSIGNED.finditer(text):
        value = _value(match)
        if value is None:
            continue
        raw, start, end, quoted = value
        if _CALL.match(raw):
            ok = False
        elif match.group("pw") is not None:
            ok = _is_value(raw, quoted, 1)
        else:  # a token's or a key's value must look like one
            ok = (_is_value(raw, quoted, 8) and not _CODE.match(raw)
                  and (any(c.isdigit() for c in raw) or len(raw) >= 16))
        if ok:
            found.append(Finding("password" if match.group("pw") else "key or token",
                                 start, end))
    for match in _PROSE_IS.finditer(text):
        value = _value(match)
        if value is not None and _is_value(value[0], False, 4):
            found.append(Finding("password", value[1], value[2]))
    for match in _PROSE_BARE.finditer(text):
        raw = match.group("v")
        word = raw.strip(_EDGE_PUNCT)
        if (len(word) >= 4 and not word.isalpha() and word.lower() not in _MASKS
                and not _PLACEHOLDER.match(raw)):
            start = match.start("v") + raw.index(word)
            found.append(Finding("password", start, start + len(word)))
    return found


def find(text: str) -> list[Finding]:
    """Every secret in ``text`` as non-overlapping spans, in order (overlapping finds are
    merged; the first one's kind is kept)."""
    found: list[Finding] = []
    lower = text.lower()
    present = {n for needle, n in _NEEDLE_FORMAT if needle in lower}
    for n in sorted(present):  # the formats' order: a tie keeps the first one's kind
        kind, pattern = _FORMATS[n]
        for match in pattern.finditer(text):
            group = "v" if "v" in pattern.groupindex else 0
            found.append(Finding(kind, match.start(group), match.end(group)))
    if any(trigger in lower for trigger in _TRIGGERS):
        found.extend(_assignments(text))
    found.extend(Finding("random token", m.start(), m.end()) for m in _TOKEN.finditer(text)
                 if _looks_random(m.group(0)) and not _in_url(text, m.start()))
    return _merge(found)


def _merge(found: list[Finding]) -> list[Finding]:
    out: list[Finding] = []
    for f in sorted((f for f in found if f.end > f.start), key=lambda f: (f.start, -f.end)):
        if out and f.start < out[-1].end:
            last = out[-1]
            out[-1] = Finding(last.kind, last.start, max(last.end, f.end))
        else:
            out.append(f)
    return out


def mask(text: str, spans: list[Finding], replacement: str = MASK) -> str:
    """``text`` with each span replaced."""
    parts, at = [], 0
    for f in spans:
        parts.append(text[at:f.start])
        parts.append(replacement)
        at = f.end
    parts.append(text[at:])
    return "".join(parts)


def scrub(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[secret]``."""
    return mask(text, find(text))
