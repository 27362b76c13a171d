"""The secrets scrubber (projections/secrets.py): what it masks, what it leaves alone, and
that no secret reaches anything derived from the log."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from events import Home
from projections import secrets
from projections.secrets import MASK, REDACTED, find, scrub

# (text with § where the secret goes, the secret, what must stay around it). Fake keys of the
# real formats.
POSITIVE = [
    ('my key is §', 'sk-proj-Zx81NvQ0aLm3pR7tY2uW9eK4ab', 'my key is'),
    ('OPENAI_API_KEY=§', 'sk-Q8vN3mX0aLq7pR2tY9uW4eK1zz', 'OPENAI_API_KEY='),
    ('anthropic: §', 'sk-ant-api03-Ab3dE5fG7hJ9kL1mN3pQ5rS7', 'anthropic:'),
    ('maps key §', 'AIzaSyD4x9Qm2Lr8Tn6Vb1Kc3Hp5Wj7Fg0Ae2Zs', 'maps key'),
    ('HF token §', 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567', 'HF token'),
    ('stripe §', 'sk_live_51HqLx2eZvKYlo2C8f9QeRtYu', 'stripe'),
    ('restricted §', 'rk_live_51HqLx2eZvKYlo2C8f9QeRtYu', 'restricted'),
    ('aws id § ok', 'AKIAIOSFODNN7EXAMPLE', 'aws id'),
    ('session § here', 'ASIAY34FZKBOKMUTVV7A', 'session'),
    ('aws_secret_access_key = §',
     'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
     'aws_secret_access_key ='),
    ('gh §', 'ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA', 'gh'),
    ('oauth §', 'gho_16C7e42F292c6912E7710c838347Ae178B4a', 'oauth'),
    ('app §', 'ghs_16C7e42F292c6912E7710c838347Ae178B4a', 'app'),
    ('user §', 'ghu_16C7e42F292c6912E7710c838347Ae178B4a', 'user'),
    ('refresh §', 'ghr_16C7e42F292c6912E7710c838347Ae178B4a', 'refresh'),
    ('fine-grained §', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop', 'fine-grained'),
    ('gitlab §', 'glpat-xY3zA1bC2dE3fG4hI5jK', 'gitlab'),
    ('bot §', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKl', 'bot'),
    ('user §', 'xoxp-123456789012-123456789012-abcdef', 'user'),
    ('hook https://§',
     'hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX',
     'hook'),
    ("curl -H 'Authorization: Bearer §' https://api",
     'abc123.def456-ghi789',
     'Authorization: Bearer'),
    ('Authorization: Basic §', 'dXNlcjpodW50ZXIy', 'Authorization: Basic'),
    ('use bearer § for it', 'Zk3mQ9vX2pL7nR4tW8yB1cD5', 'use bearer'),
    ('jwt §',
     'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
     'jwt'),
    ('-----BEGIN RSA PRIVATE KEY-----\n§\n-----END RSA PRIVATE KEY-----\nthanks',
     'MIIEpAIBAAKCAQEA7bq',
     'thanks'),
    ('-----BEGIN EC PRIVATE KEY-----\n§\n-----END EC PRIVATE KEY-----', 'MHcCAQEEIIrYSSNQFaA', ''),
    ('-----BEGIN OPENSSH PRIVATE KEY-----\n§\n-----END OPENSSH PRIVATE KEY-----',
     'b3BlbnNzaC1rZXktdjE',
     ''),
    ('-----BEGIN DSA PRIVATE KEY-----\n§\n-----END DSA PRIVATE KEY-----', 'MIIBuwIBAAKBgQDdsa', ''),
    ('-----BEGIN ENCRYPTED PRIVATE KEY-----\n§\n-----END ENCRYPTED PRIVATE KEY-----',
     'MIIFHDBOBgkqhkiG9w0',
     ''),
    ('-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n§\n=Ab3D\n'
     '-----END PGP PRIVATE KEY BLOCK-----\nmy pgp key',
     'lQOYBF0ZxIQBCADpgp',
     'my pgp key'),
    ('half a key: -----BEGIN PRIVATE KEY-----\n§', 'MIIEvQIBADANBgkqhk', 'half a key:'),
    ('password=§', 'hunter2pass', 'password='),
    ('db password: §', 'hunter2', 'db password:'),
    ('DB_PASSWORD=§', 's3cr3t-Pa55', 'DB_PASSWORD='),
    ('POSTGRES_PASSWORD: §', 'correcthorse', 'POSTGRES_PASSWORD:'),
    ('MYSQL_ROOT_PASSWORD=§', 'rootpw42', 'MYSQL_ROOT_PASSWORD='),
    ('{"password": "§"}', 'pa ss word', '{"password": "'),
    ("dbPassword = '§'", 'Tr0ub4dor&3', "dbPassword = '"),
    ('API_KEY=§', 'abc123def456ghi', 'API_KEY='),
    ('client_secret: §', '8f3KqPz91LmV', 'client_secret:'),
    ('GITHUB_TOKEN=§', 'tok3n-f0r-ci-2024', 'GITHUB_TOKEN='),
    ('secret: §', '7xQ2pL9mZ4', 'secret:'),
    ('Password: §', 'x', 'Password:'),
    ('password §', 'hunter2', 'password'),
    ('Password §', 'hunter2', 'Password'),
    ('my password is §', 'hunter2', 'my password is'),
    ('My password was §.', 'swordfish', 'My password was'),
    ('the password for the router is §', 'Tr0ub4dor', 'the password for the router is'),
    ('my PIN is §', '4821', 'my PIN is'),
    ('postgres://ann:§@db.local:5432/app', 'hunter2', 'postgres://ann:'),
    ('postgresql://ann:§@localhost/app', 's3cret', '@localhost/app'),
    ('mysql://root:§@127.0.0.1:3306/shop', 'rootpw42', 'mysql://root:'),
    ('mongodb+srv://app:§@cluster0.ab1cd.mongodb.net/db',
     'Mongo99pw',
     '@cluster0.ab1cd.mongodb.net/db'),
    ('redis://:§@cache:6379/0', 'r3dis-pass', 'redis://:'),
    ('amqp://guest:§@mq:5672/', 'rabbit42', 'amqp://guest:'),
    ("an unknown provider's key §",
     'Zq8Lm2Xv9Rt4Wp7Ks1Nb6Yc3Hd5Jf0Ga',
     "an unknown provider's key"),
]

NEGATIVE = [
    "I forgot my password yesterday",
    "I need a password reset link",
    "Use a password manager: Bitwarden or 1Password.",
    "**Consider a password manager**: use one.",
    "the password is in the vault",
    "My password was changed last week.",
    "def check_password(password):",
    "user.password_hash = hash(password)",
    "self.password = password",
    "password: str",
    "new_password = prompt(\"Please enter\")",
    "token = next(tokens)",
    "max_tokens=100 and tokens: 512",
    "budget_tokens: 2048",
    "Monetizing the token: Economic models",
    "secret: the cake is a lie",
    "the secret is to rest the dough",
    "$api_secret = 'YOUR_API_SECRET';",
    "export DB_PASSWORD=$DB_PASSWORD",
    "password: ${POSTGRES_PASSWORD}",
    "api_key: <your key here>",
    "token = os.environ['GITHUB_TOKEN']",
    "PWD=/home/ann/project",
    "LED_PIN = 18 on the Raspberry Pi",
    "the GPIO pin is 17",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "see src/components/UserProfileCard/index.tsx",
    "https://www.forbes.com/sites/darrynpollock/2019/04/15/can-tokenisation-open-a-new-world",
    "https://example.com:8080/path/to/page",
    "my_very_long_python_identifier_name_2 = 3",
    "20cm-hoch-einlagiges-Einlagetuch-Autopflegegarage-6-Rollen-im-Paket",
    "the task-management-system-for-my-team works",
    "a bearer of bad news",
    "ssh ann@host and scp file ann@host:/tmp",
    "ULID 01HZX3K7V9Q2M8N4P6R0S5T1W3",
    "tea, no sugar; I live in Leeds",
]


@pytest.mark.parametrize(("text", "secret", "kept"), POSITIVE, ids=[p[1][:20] for p in POSITIVE])
def test_each_kind_of_secret_is_masked(text: str, secret: str, kept: str) -> None:
    text = text.replace("§", secret)
    out = scrub(text)
    assert secret not in out and MASK in out, out
    assert kept in out, out
    assert find(text), "find() sees it too"


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text
    assert find(text) == []


# Pieces of secrets and of their formats' literals, and letters that match i, k and s
# case-blind without lower-casing to them (İ ı K ſ), for texts where a skipped scan would show.
_PIECES = st.sampled_from([
    *(p[1] for p in POSITIVE), *(p[0].replace("§", p[1]) for p in POSITIVE[:20]),
    *(n for needles in secrets._NEEDLES.values() for n in needles),
    "Authorization: Bearer ", "AUTHORİZATİON: ", "authorızation=", "BEARER ", "sk-", "SK-",
    "ghp_", "AKIA", "-----BEGIN RSA PRIVATE KEY-----", "https://ann:", "@db", "eyJ", "\u0130",
    "\u0131", "\u212a", "\u017f", "Zx81NvQ0aLm3pR7tY2uW9eK4abQ", " ", "\n", "=", ":", "."])


@settings(max_examples=300, deadline=None)
@example("AUTHOR\u0130ZAT\u0130ON: Zx81NvQ0aLm3pR7tY2uW9eK4abQ")  # lower(): "authori̇zati̇on"
@example("author\u0131zation=Zx81NvQ0aLm3pR7tY2uW9eK4abQ")
@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=12).map("".join))
def test_the_literal_prefilter_changes_no_finding(text: str) -> None:
    """Each known format is scanned only when one of its literals is in the text
    (``_NEEDLES``): the same findings as scanning every format always."""
    every = [("", n) for n in range(len(secrets.FORMATS))]  # "" is in every text
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(secrets, "_NEEDLE_FORMAT", every)
        expected = find(text)
    assert find(text) == expected


def test_every_format_has_its_literals() -> None:
    assert set(secrets._NEEDLES) == {kind for kind, _ in secrets.FORMATS}
    assert all(secrets._NEEDLES.values())


def test_findings_name_the_kind_never_the_secret() -> None:
    text = "key sk-proj-Zx81NvQ0aLm3pR7tY2uW9eK4ab and DB_PASSWORD=hunter2"
    kinds = [(f.kind, text[f.start:f.end]) for f in find(text)]
    assert kinds == [("OpenAI key", "sk-proj-Zx81NvQ0aLm3pR7tY2uW9eK4ab"), ("password", "hunter2")]


def test_masks_are_not_secrets() -> None:
    """Scrubbing is idempotent, and what `diarist redact` wrote is not found again."""
    for text, secret, _kept in POSITIVE:
        once = scrub(text.replace("§", secret))
        assert scrub(once) == once
    assert find(f"password: {REDACTED}") == [] and find(f"DB_PASSWORD={MASK}") == []



# --- end to end: no secret reaches anything derived from the log ---------------------------

SECRETS = {
    "openai": "sk-proj-Q8vN3mX0aLq7pR2tY9uW4eK1zzA7",
    "db": "s3cr3t-Pa55-DB",
    "prose": "Tr0ub4dor&3x",
    "pgp": "lQOYBF0ZxIQBCADpgpSECRETBODY",
    "url": "Mongo99pwXYZ",
    "github": "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA",
    "aws": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3",
    "bare": "hunter2",
    "postgres": "PgPassw0rd77",
}
S = SECRETS
PASTED_TURNS = [
    ("user", f"I live in Leeds and my openai key is {S['openai']}"),
    ("assistant", f"Noted, your key {S['openai']} is safe with me."),
    ("user", f"For the NAS I use DB_PASSWORD={S['db']} and my password is {S['prose']}"),
    ("assistant", "All right."),
    ("user", "I like hiking. Here is my PGP key:\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
             f"{S['pgp']}\n=Ab3D\n-----END PGP PRIVATE KEY BLOCK-----"),
    ("assistant", "Please do not paste keys."),
    ("user", f"I connect to mongodb+srv://app:{S['url']}@cluster0.ab1cd.mongodb.net/db daily"),
    ("assistant", f"mongodb+srv://app:{S['url']}@cluster0.ab1cd.mongodb.net/db works."),
    ("user", f"I prefer tea. Password {S['bare']}"),
    ("assistant", "Tea it is."),
    ("user", f"My GitHub token is {S['github']}, aws_secret_access_key = {S['aws']}, "
             f"jwt {S['jwt']}"),
    ("assistant", "Got it."),
]


def pasted_transcript(path: Path) -> Path:
    import json

    lines = [{"session": "s1", "at": f"2024-03-01T10:{i:02d}:00Z", "role": role,
              "name": "Ann" if role == "user" else "Bot", "text": text, "ref": f"p:{i}"}
             for i, (role, text) in enumerate(PASTED_TURNS)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def leaks(data: bytes | str) -> list[str]:
    """The names of the secrets found in ``data`` (as text or as JSON-escaped text)."""
    import json

    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [name for name, value in SECRETS.items()
            if value in text or json.dumps(value)[1:-1] in text]


def files_with_secrets(root: Path, *, except_log: bool = True) -> dict[str, list[str]]:
    """Every file under ``root`` (databases, their -wal/-shm, journals, vectors, queue …)
    that holds a secret's bytes; the log itself left out with ``except_log``."""
    found = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or (except_log and path.name.startswith("events.db")):
            continue
        names = leaks(path.read_bytes())
        if names:
            found[path.relative_to(root).as_posix()] = names
    return found


def test_no_secret_reaches_anything_derived_from_the_log(
        model_home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets pasted into an import, a `remember` and a chat (the assistant echoing some)
    reach no journal, MEMORY.md, search index, vector input, recall or chat memory block,
    mining or consolidation prompt, log line — no file under the home but the log."""
    from click.testing import CliRunner

    from cli.main import cli
    from events.config import Config
    from projections.embedding import OnnxEmbedder
    from workers.chat.session import ChatSession
    from workers.llm import ScriptedBackend

    from .fake_llm import fake_llm

    home = model_home
    monkeypatch.delenv("DIARIST_NO_EMBED")
    embedded: list[str] = []
    real_embed = OnnxEmbedder.embed

    def spy_embed(self, texts):  # type: ignore[no-untyped-def]
        embedded.extend(texts)
        return real_embed(self, texts)

    monkeypatch.setattr(OnnxEmbedder, "embed", spy_embed)
    prompts: list[list[dict]] = []

    class Recording(ScriptedBackend):
        def chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            prompts.append([dict(m) for m in messages])
            return super().chat(messages, **kwargs)

    output: list[str] = []

    def cli_run(*args: str) -> None:
        result = CliRunner().invoke(cli, ["-vv", "--log-json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        output.append(result.output)

    cli_run("import", str(pasted_transcript(tmp_path / "pasted.jsonl")))
    cli_run("remember", f"the deploy token is {S['github']} and postgres://ann:{S['postgres']}"
                        "@db.local:5432/app")
    cli_run("remember", f"my wifi password is {S['prose']} and I like green tea")
    from events import EventLog
    from projections import open_store

    with EventLog(home.events_db) as log, open_store(home, log) as store:
        chat = ChatSession(home, log, store, ScriptedBackend(None), Config())
        chat.start()
        chat.send(f"my openai key is {S['openai']} and my password is {S['prose']}")
        chat.end()
    cli_run("sync")
    with fake_llm() as llm:
        cli_run("mine", "--dry-run", "--backend", "openai", "--model", "m", "--base-url", llm.url)
        cli_run("mine", "--heuristic")
        cli_run("dream")
        cli_run("consolidate", "--dry-run", "--backend", "openai", "--model", "m",
                "--base-url", llm.url)
        cli_run("consolidate", "--heuristic")
        model_prompts = llm.chat_calls()
    cli_run("sync")
    for query in ("openai key", "password NAS", "PGP key", "mongodb connection", "GitHub token",
                  "deploy token postgres", "tea"):
        cli_run("recall", query, "--budget", "0", "--json")
        cli_run("recall", query)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        second = ChatSession(home, log, store, Recording(None), Config())
        second.start()
        second.send("what is my openai key, my password and the deploy token?")
        block = second.memory_text()
        second.end()

    assert any("Leeds" in t for t in embedded) and len(embedded) > 10
    assert len(model_prompts) >= 2 and prompts
    assert "Leeds" in str(model_prompts), "the mining prompt"
    assert "Section:" in str(model_prompts), "the consolidation prompt"
    assert "[secret]" in (home.memory_dir / "MEMORY.md").read_text()
    assert "[secret]" in (home.memory_dir / "2024-03-01.md").read_text()
    assert "[secret]" in block and "openai key" in block
    where = {"vector input": leaks("\n".join(embedded)),
             "mining and consolidation prompts": leaks(str(model_prompts)),
             "second chat's prompts": leaks(str(prompts)), "memory block": leaks(block),
             "CLI output and log lines": leaks("\n".join(output)),
             **files_with_secrets(home.root)}
    assert not any(where.values()), {k: v for k, v in where.items() if v}
    everything = b"".join(p.read_bytes() for p in home.root.glob("events.db*"))
    assert set(leaks(everything)) == set(SECRETS)  # the log keeps what was said


def test_log_lines_are_scrubbed(capsys: pytest.CaptureFixture[str]) -> None:
    """diarist's structured logger (fields, the event name, an exception's text) and the
    standard-library logging Huey uses both mask secrets, in text and in JSON lines."""
    import logging

    from cli.logging_setup import setup_logging
    from events.logger import get_logger

    for json_lines in (False, True):
        setup_logging(json_lines=json_lines, verbose=2)
        log = get_logger("diarist.test")
        log.warning("chat.failed", error=f"server said: password is {S['prose']}",
                    key=S["openai"], count=3)
        try:
            raise RuntimeError(f"boom DB_PASSWORD={S['db']}")
        except RuntimeError:
            log.error("task.crashed", exc_info=True)
            logging.getLogger("huey").exception("task %s failed with %s", "t1",
                                                f"token {S['github']}")
        logging.getLogger("huey").info("args: %r", {"jwt": S["jwt"]})
        err = capsys.readouterr().err
        assert "chat.failed" in err and "task.crashed" in err and "t1 failed" in err, err
        assert "boom DB_PASSWORD=" in err and "[secret]" in err, err
        assert not leaks(err), (leaks(err), err)
    setup_logging(json_lines=False, verbose=0)


def test_the_shadow_journal_neither_sends_nor_records_a_secret(home: Home) -> None:
    """The per-exchange extraction is a prompt built for memory: the turns are scrubbed
    before the model sees them, and a secret the model repeats anyway is masked before
    `FactsExtracted` is appended (so the log holds no second copy for redact to chase)."""
    from events import EventLog
    from projections import open_store
    from workers.chat.shadow_journal import shadow_journal

    from .test_extract import Recording, exchange

    backend = Recording(json.dumps([f"User's key is {S['openai']}",
                                    f"User's DB_PASSWORD={S['db']}"]))
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session, user_id, assistant_id = exchange(
            home, log, store, backend, text=f"my key is {S['openai']}, DB_PASSWORD={S['db']}")
        event = shadow_journal(home, log, session.id, user_id, assistant_id, backend,
                               store=store)
    assert event is not None
    assert not leaks(json.dumps(backend.extraction_calls()))
    assert "[secret]" in json.dumps(backend.extraction_calls())
    assert not leaks(json.dumps(event.payload)) and "[secret]" in event.payload["facts"][0]
