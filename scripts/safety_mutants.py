"""Hand mutants of raf's safety rules: each one breaks a single rule in the source, runs
the tests that guard that rule, and expects them to fail. A mutant the tests do not
notice ("survived") is a rule nothing checks.

Each mutant replaces one exact snippet of a source file (it must occur exactly once, so a
refactor that moves the rule makes the mutant fail loudly instead of silently testing
nothing), runs its tests with bytecode writing off (so no mutated .pyc is left behind),
and puts the file back byte for byte, whatever happens.

    python scripts/safety_mutants.py            # every mutant
    python scripts/safety_mutants.py casefold   # those whose name contains "casefold"
    python scripts/safety_mutants.py --list

Exit status 0 when every mutant chosen was killed, 1 when one survived, 2 when a mutant no
longer applies (its snippet is gone or ambiguous).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    """One broken rule: `old` in `file` becomes `new`; some test in `tests` must fail."""

    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS: tuple[Mutant, ...] = (
    # -- the workspace's path rules
    Mutant(
        "workspace: deny rules without the casefold",
        "src/raf/tools/workspace.py",
        '            variants |= {subject, unicodedata.normalize("NFKC", subject)}\n'
        "            variants |= {v.casefold() for v in list(variants)}\n",
        '            variants |= {subject, unicodedata.normalize("NFKC", subject)}\n',
        ("tests/tools/test_workspace.py",),
    ),
    Mutant(
        "workspace: deny rules without NFKC look-alikes",
        "src/raf/tools/workspace.py",
        'variants |= {subject, unicodedata.normalize("NFKC", subject)}',
        "variants |= {subject}",
        ("tests/tools/test_workspace.py", "tests/tools/scope/test_path_rules.py"),
    ),
    # -- terminal output
    Mutant(
        "terminal: control sequences kept",
        "src/raf/cli/terminal_text.py",
        '    text = _SEQUENCES.sub("", text.replace("\\r\\n", "\\n"))\n',
        '    text = text.replace("\\r\\n", "\\n")\n',
        ("tests/cli/test_terminal_text.py",),
    ),
    Mutant(
        "terminal: streamed model text printed raw",
        "src/raf/cli/_render.py",
        "            text = terminal_safe(update.text)\n",
        "            text = update.text\n",
        ("tests/cli/test_terminal_attacks.py",),
    ),
    # -- tenancy
    Mutant(
        "tenancy: any owner is the caller",
        "src/raf/serve/tenancy.py",
        "        return owner is not None and owner == self.owner\n",
        "        return True\n",
        ("tests/serve/test_tenancy_keys.py", "tests/serve/test_security.py"),
    ),
    Mutant(
        "tenancy: every key is the caller's",
        "src/raf/serve/tenancy.py",
        '        return key.startswith(self.key(""))\n',
        "        return True\n",
        ("tests/serve/ui/test_api.py", "-k", "checkpoints_belong or only_the_callers"),
    ),
    Mutant(
        "tenancy: chosen ids not scoped to their token",
        "src/raf/serve/tenancy.py",
        '        return f"{self.owner[:_TAG_LENGTH]}.{name}"\n',
        "        return name\n",
        ("tests/serve/test_security.py",),
    ),
    Mutant(
        "tenancy: eval datasets saved from a session shared by every token",
        "src/raf/serve/ui/evals.py",
        "    return base / OWNED_DATASETS / owner[:16]\n",
        "    return base\n",
        ("tests/serve/ui/test_eval_cases_api.py",),
    ),
    Mutant(
        "tenancy: OpenAI responses not scoped to their token",
        "src/raf/serve/openai/responses.py",
        "    return tenant.key(RESPONSE_PREFIX + response_id)\n",
        "    return RESPONSE_PREFIX + response_id\n",
        ("tests/serve/openai/test_openai_responses.py", "-k", "tokens_own"),
    ),
    # -- admission and limits
    Mutant(
        "admission: text/plain bodies accepted",
        "src/raf/serve/security.py",
        '        if scope["method"] not in UNSAFE_METHODS or is_json(headers.get("content-type")):',
        '        if True or is_json(headers.get("content-type")):',
        ("tests/serve/test_hostile_requests.py",),
    ),
    Mutant(
        "limits: JSON depth never too deep",
        "src/raf/serve/limits.py",
        "            if depth > limit:\n                return True\n",
        "            if depth > 10**9:\n                return True\n",
        ("tests/serve/test_limits.py", "-k", "deep or depth"),
    ),
    Mutant(
        "limits: rate limit never waits",
        "src/raf/serve/limits.py",
        "        if level < 1.0:\n",
        "        if level < -1.0:\n",
        ("tests/serve/test_limits.py", "-k", "rate"),
    ),
    Mutant(
        "limits: no header deadline",
        "src/raf/serve/connections.py",
        "        if loop.time() >= due:\n            self.transport.abort()\n",
        "        if False:\n            self.transport.abort()\n",
        ("tests/serve/test_limits.py", "-k", "half_sent"),
    ),
    Mutant(
        "admission: a browser's bodiless POST accepted",
        "src/raf/serve/security.py",
        '        if not has_body and "origin" not in headers:',
        "        if not has_body:",
        ("tests/serve/test_hostile_requests.py",),
    ),
    Mutant(
        "limits: no cap on requests answered at once",
        "src/raf/serve/security.py",
        "        if self.streams >= limits.max_streams:",
        "        if False:",
        ("tests/serve/test_limits.py", "-k", "streams"),
    ),
    Mutant(
        "limits: keep-alive left to the server's default",
        "src/raf/serve/server.py",
        "        timeout_keep_alive=limits.keep_alive,\n",
        "",
        ("tests/serve/test_limits.py", "-k", "keep_alive"),
    ),
    Mutant(
        "limits: one token may hold every stream slot",
        "src/raf/serve/security.py",
        "        if holder is not None and self.held.get(holder, 0) >= limits.streams_per_caller:",
        "        if False:",
        ("tests/serve/test_stream_share.py",),
    ),
    Mutant(
        "limits: stream slots shared by every token from one address",
        "src/raf/serve/security.py",
        "        if self.security.tokens:\n            return owner\n",
        "        if self.security.tokens:\n            return address\n",
        ("tests/serve/test_stream_share.py",),
    ),
    Mutant(
        "limits: a stream slot never given back to its token",
        "src/raf/serve/security.py",
        "                left = self.held.pop(holder) - 1\n",
        "                left = self.held.pop(holder)\n",
        ("tests/serve/test_stream_share.py",),
    ),
    Mutant(
        "auth: wrong tokens never bar an address",
        "src/raf/serve/security.py",
        "            barred = self.auth_failures.waiting(address)\n            if barred > 0:\n",
        "            barred = self.auth_failures.waiting(address)\n            if False:\n",
        ("tests/serve/test_auth_failures.py",),
    ),
    Mutant(
        "auth: a wrong token not counted",
        "src/raf/serve/security.py",
        "                self.auth_failures.failed(address)\n",
        "                pass\n",
        ("tests/serve/test_auth_failures.py",),
    ),
    Mutant(
        "auth: one address's wrong tokens bar every address",
        "src/raf/serve/security.py",
        "            barred = self.auth_failures.waiting(address)\n",
        '            barred = self.auth_failures.waiting("")\n',
        ("tests/serve/test_auth_failures.py",),
    ),
    Mutant(
        "loopback: a name under .localhost counts as loopback",
        "src/raf/serve/security.py",
        '    if name == "localhost":\n',
        '    if name == "localhost" or name.endswith(".localhost"):\n',
        ("tests/serve/test_security.py", "-k", "app_localhost"),
    ),
    Mutant(
        "auth: the MCP server's HTTP app goes without raf serve's guard",
        "src/raf/serve/mcp/server.py",
        "        app = SecurityMiddleware(app, security)\n",
        "        app = app\n",
        ("tests/serve/mcp/test_mcp_serve_http.py", "-k", "wrong_tokens or token_is_required"),
    ),
    Mutant(
        "mcp tenancy: every bearer token is one owner",
        "src/raf/serve/mcp/server.py",
        "    return owner if isinstance(owner, str) else ANONYMOUS\n",
        "    return ANONYMOUS\n",
        ("tests/serve/mcp/test_mcp_host.py", "-k", "one_token"),
    ),
    Mutant(
        "mcp leases: a second ask stops the run in progress instead of being refused",
        "src/raf/serve/mcp/server.py",
        "        session_name=paused.new_name,\n",
        "        session_name=paused.new_name,\n        if_busy='interrupt',\n",
        ("tests/serve/mcp/test_mcp_host.py", "-k", "refused"),
    ),
    Mutant(
        "auth: the failure table never forgets an address",
        "src/raf/serve/limits.py",
        " failures, keep=keep)\n",
        " failures, keep=10**9)\n",
        ("tests/serve/test_auth_failures.py", "-k", "bounded"),
    ),
    # -- outbound fetches and schema refs
    Mutant(
        "outbound: private addresses allowed",
        "src/raf/core/outbound.py",
        "    if not addr.is_global or addr.is_multicast or addr.is_reserved or addr"
        ".is_unspecified:",
        "    if False:",
        ("tests/core/test_outbound_hostile.py", "tests/tools/test_outbound_fetchers.py"),
    ),
    Mutant(
        "outbound: a 6to4 address passes without its IPv4 address checked",
        "src/raf/core/outbound.py",
        "            check_address(str(addr.sixtofour), allow_private=False, who=who)\n"
        "            return\n",
        "            return\n",
        ("tests/core/test_outbound_hostile.py", "tests/tools/test_web.py"),
    ),
    Mutant(
        "outbound: async hops not checked (redirects)",
        "src/raf/core/outbound.py",
        "                target = await check_url(str(request.url), self.rule)",
        "                target = await check_url(str(request.url), replace(self.rule, "
        "allow_private=True))",
        ("tests/tools/test_outbound_fetchers.py",),
    ),
    Mutant(
        "outbound: blocking hops not checked (knowledge URLs)",
        "src/raf/core/outbound.py",
        "                target = check_url_blocking(str(request.url), self.rule)",
        "                target = check_url_blocking(str(request.url), replace(self.rule, "
        "allow_private=True))",
        ("tests/context/knowledge/test_knowledge_urls.py",),
    ),
    Mutant(
        "schema refs: outside refs not refused",
        "src/raf/core/schema_refs.py",
        "    outside = outside_refs(schema, hosts)\n",
        "    outside: list[str] = []\n",
        ("tests/core/test_schema_refs.py",),
    ),
    Mutant(
        "schema refs: a property named default taken for data",
        "src/raf/core/schema_refs.py",
        '    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}\n',
        "    set[str]()\n",
        ("tests/core/test_schema_refs.py", "-k", "named_like"),
    ),
    Mutant(
        "schema refs: a ref loop validated until the stack breaks",
        "src/raf/core/schema_refs.py",
        "    loop = ref_loop(schema)\n",
        "    loop = None\n",
        ("tests/core/test_schema_refs.py", "-k", "itself"),
    ),
    # -- files a user names
    Mutant(
        "attachments: a kernel file read",
        "src/raf/core/safe_read.py",
        "    place = _kernel_place(real)\n",
        "    place = None\n",
        ("tests/clients/test_media.py", "-k", "regular"),
    ),
    Mutant(
        "attachments: a FIFO or device read",
        "src/raf/core/safe_read.py",
        "        if not stat.S_ISREG(info.st_mode):\n",
        "        if stat.S_ISDIR(info.st_mode):\n",
        ("tests/clients/test_media.py", "-k", "regular"),
    ),
    Mutant(
        "attachments: the size not checked before reading",
        "src/raf/core/safe_read.py",
        "        if info.st_size > limit:\n",
        "        if False:\n",
        ("tests/clients/test_media.py", "-k", "over_the_limit"),
    ),
    Mutant(
        "attachments: the resolved path opened whole, links on it followed",
        "src/raf/core/safe_read.py",
        "    fd = _open_resolved(real, shown)\n",
        "    fd = os.open(real, _OPEN_FLAGS)\n",
        ("tests/core/test_safe_read.py",),
    ),
    Mutant(
        "attachments: the walk follows a folder that became a link",
        "src/raf/core/safe_read.py",
        "os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC\n",
        "os.O_DIRECTORY | os.O_CLOEXEC\n",
        ("tests/core/test_safe_read.py",),
    ),
    Mutant(
        "token file: one other users can read accepted",
        "src/raf/cli/serve.py",
        "        if mode & 0o007 or mode & 0o020:\n",
        "        if False:\n",
        ("tests/cli/test_token_file.py", "-k", "not raf_serve"),
    ),
    Mutant(
        "private data: eval cases saved world-readable",
        "src/raf/evals/folder.py",
        "            atomic_write_text(path, text, keep_mode=True)",
        "            atomic_write_text(path, text, mode=0o644, keep_mode=True)",
        ("tests/evals/test_folder.py", "-k", "new_dataset"),
    ),
    Mutant(
        "private data: a store's subfolders made with the umask",
        "src/raf/tools/scope/confined.py",
        "                    dir_mode=DIR_MODE,",
        "                    dir_mode=0o777,",
        ("tests/stores/test_private_data_folder.py",),
    ),
    # -- secrets in messages and logs
    Mutant(
        "redaction: a secret matched in its own case only",
        "src/raf/clients/errors.py",
        '    return re.compile("|".join(alternatives), re.IGNORECASE)',
        '    return re.compile("|".join(alternatives))',
        ("tests/clients/test_redaction_forms.py", "-k", "every_form"),
    ),
    Mutant(
        "redaction: a secret's base64 forms let through",
        "src/raf/clients/errors.py",
        "    forms += _base64_cores(raw)\n",
        "",
        ("tests/clients/test_redaction_forms.py", "-k", "every_form"),
    ),
    Mutant(
        "redaction: a secret echoed cut short let through",
        "src/raf/clients/errors.py",
        '        text = mask_truncated(pattern.sub("***", text), {*known, *escaped})',
        '        text = pattern.sub("***", text)',
        ("tests/clients/test_redaction_forms.py", "-k", "cut_short"),
    ),
    Mutant(
        "redaction: a cut mark beside a secret's start or end not looked for",
        "src/raf/clients/truncated_echoes.py",
        "        if before or after:\n",
        "        if False:\n",
        ("tests/clients/test_redaction_forms.py", "-k", "cut_short"),
    ),
    Mutant(
        "redaction: a key-shaped echo cut short let through",
        "src/raf/clients/errors.py",
        'r"sk-[A-Za-z0-9_\\-]*(?:[*',
        'r"(?!)sk-[A-Za-z0-9_\\-]*(?:[*',
        ("tests/clients/test_redaction_forms.py", "-k", "cut_short"),
    ),
    Mutant(
        "redaction: a secret as JSON writes it let through",
        "src/raf/clients/errors.py",
        "    forms += _json_forms(secret)\n",
        "",
        ("tests/clients/test_redaction_forms.py", "-k", "line_break"),
    ),
    Mutant(
        "redaction: a key split by JSON's line break let through",
        "src/raf/clients/errors.py",
        '_SPLITS = r"(?:[\\s\\u200b-\\u200d\\u2060\\ufeff\\"\'+,]|\\\\{1,3}[nrt]){0,5}"',
        '_SPLITS = r"(?:[\\s\\u200b-\\u200d\\u2060\\ufeff\\"\'+,]){0,5}"',
        ("tests/clients/test_redaction_forms.py", "-k", "line_break"),
    ),
    Mutant(
        "served model errors: clients read the provider's URL and body",
        "src/raf/serve/requests.py",
        "        return model_error(exc)",
        '        return ServeError(502, "model_error", str(exc))',
        ("tests/serve/test_model_errors_served.py",),
    ),
    Mutant(
        "served model errors: the MCP server tells the provider's URL and body",
        "src/raf/serve/mcp/server.py",
        "    if is_model_failure(exc):\n",
        "    if False:\n",
        ("tests/serve/test_model_errors_served.py", "-k", "mcp"),
    ),
    Mutant(
        "served model errors: a durable run's model error read as a run failure",
        "src/raf/serve/model_errors.py",
        "and kind in _model_error_names()",
        "and kind in ()",
        ("tests/serve/test_model_errors_served.py", "-k", "durable"),
    ),
    Mutant(
        "public url: characters a URL must escape are published",
        "src/raf/serve/public_url.py",
        "    bad = _unescaped(url.strip())",
        "    bad = None",
        ("tests/serve/a2a/test_a2a_versions.py", "-k", "public_url"),
    ),
    Mutant(
        "public url: a bare % is published",
        "src/raf/serve/public_url.py",
        'or (char == "%" and not _ESCAPE.match(url, index))',
        "or False",
        ("tests/serve/a2a/test_a2a_versions.py", "-k", "public_url"),
    ),
    Mutant(
        "sdk logs: botocore left at DEBUG",
        "src/raf/clients/sdk_logs.py",
        "            logger.setLevel(logging.INFO)\n",
        "            pass\n",
        ("tests/clients/test_redaction_forms.py", "-k", "botocore"),
    ),
    Mutant(
        "terminal: raf convert writes hidden characters raw",
        "src/raf/decl/convert.py",
        "    return escape_hidden_characters(out, surrogate_pairs=False)",
        "    return out",
        ("tests/cli/test_output_paths_hide_nothing.py", "-k", "yaml"),
    ),
    Mutant(
        "idempotency: a run without a session keyed by its id()",
        "src/raf/agent/run/invoke.py",
        'run_id="" if context.session else context.run_id,',
        'run_id="" if context.session else f"{id(context):x}",',
        ("tests/core/test_idempotency.py", "-k", "never_share"),
    ),
    # -- deserialisation
    Mutant(
        "durable: pickled runs recovered at launch",
        "src/raf/durable/runtime.py",
        "                if unsafe:\n                    raise UnsafeRecordError(",
        "                if False:\n                    raise UnsafeRecordError(",
        ("tests/durable/test_pickles.py",),
    ),
    Mutant(
        "durable: a pickled record is loaded",
        "src/raf/durable/serializer.py",
        "    def deserialize(self, serialized_data: str) -> Any:\n"
        "        raise UnsafeRecordError(\n"
        "            \"a durable run's record is a Python pickle",
        "    def deserialize(self, serialized_data: str) -> Any:\n"
        "        import base64, pickle\n"
        "        return pickle.loads(base64.b64decode(serialized_data))\n"
        "        raise UnsafeRecordError(\n"
        "            \"a durable run's record is a Python pickle",
        ("tests/durable/test_pickles.py",),
    ),
    Mutant(
        "durable: every pending record without a serialization name is let through",
        "src/raf/durable/serializer.py",
        '"AND name <> :scheduled)) LIMIT 6"',
        '"AND name <> name)) LIMIT 6"',
        ("tests/durable/test_pickles.py",),
    ),
    # -- durable queue and schedules
    Mutant(
        "durable: a session's runs not one at a time in the queue",
        "src/raf/durable/runtime.py",
        "                    partition_concurrency=1,\n",
        "",
        ("tests/durable/test_background.py", "-k", "two_background"),
    ),
    Mutant(
        "schedules: a document's schedule served without --durable",
        "src/raf/cli/serve.py",
        "    if declared and not args.durable:",
        "    if False:",
        ("tests/durable/test_schedules.py", "-k", "documents_schedule_is_refused"),
    ),
    Mutant(
        "schedules: a cron field outside its range accepted",
        "src/raf/decl/documents/schedule_decls.py",
        "                if not low <= number <= high:",
        "                if False:",
        ("tests/decl/documents/test_schedule_decls.py",),
    ),
    # -- answers claimed once
    Mutant(
        "claims: SQLite claim without its write lock",
        "src/raf/stores/checkpoints.py",
        '            conn.execute("BEGIN IMMEDIATE")\n            try:\n                for rid in',
        '            conn.execute("BEGIN")\n            try:\n                for rid in',
        ("tests/workflow/test_answers_claimed.py", "-k", "racing"),
    ),
    Mutant(
        "claims: SQLite claim never refuses",
        "src/raf/stores/checkpoints.py",
        "                    elif row[0] != claimant:\n"
        "                        raise answer_claimed(checkpoint_id, rid, float(row[1]))\n"
        "            except BaseException:\n"
        '                conn.execute("ROLLBACK")',
        "                    elif False:\n"
        "                        raise answer_claimed(checkpoint_id, rid, float(row[1]))\n"
        "            except BaseException:\n"
        '                conn.execute("ROLLBACK")',
        ("tests/workflow/test_answers_claimed.py", "-k", "sqlite"),
    ),
    Mutant(
        "claims: PostgreSQL claim never refuses",
        "src/raf/stores/postgres_checkpoints.py",
        "                if row is not None and str(row[0]) != claimant:",
        "                if False:",
        ("tests/workflow/test_answers_claimed.py", "-k", "postgres and concurrent"),
    ),
    Mutant(
        "claims: durable answers sent unclaimed",
        "src/raf/durable/runtime.py",
        "            await store.claim(paused.checkpoint_id, sorted(answers), claimant)\n",
        "            store.claim  # noqa: B018\n",
        ("tests/durable/test_answer_processes.py",),
    ),
    Mutant(
        "claims: JSON files claimed without O_EXCL",
        "src/raf/stores/checkpoints.py",
        "fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)",
        "fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)",
        ("tests/workflow/test_answers_claimed.py", "-k", "json"),
    ),
    # -- files and documents
    Mutant(
        "private files: stores created 0644",
        "src/raf/core/private_files.py",
        "FILE_MODE = 0o600",
        "FILE_MODE = 0o644",
        ("tests/core/test_private_files.py",),
    ),
    Mutant(
        "private files: folders created 0755",
        "src/raf/core/private_files.py",
        "DIR_MODE = 0o700",
        "DIR_MODE = 0o755",
        ("tests/core/test_private_files.py",),
    ),
    Mutant(
        "knowledge: size cap checked after reading",
        "src/raf/context/knowledge/loaders.py",
        "        if st.st_size > MAX_SOURCE_BYTES:\n            raise OSError(errno.EFBIG,",
        "        if False:\n            raise OSError(errno.EFBIG,",
        ("tests/context/knowledge/test_knowledge_concurrent.py", "-k", "oversized"),
    ),
    Mutant(
        "knowledge: the default embedder writes into another embedder's index",
        "src/raf/context/knowledge/index.py",
        "if row is not None and int(row[0]) // 4 != embedder.dimensions:",
        "if False:",
        ("tests/context/knowledge/test_knowledge_embeddings.py", "-k", "another_embedders"),
    ),
    Mutant(
        "knowledge: the default embedder offline fails the search instead of BM25",
        "src/raf/context/knowledge/embeddings.py",
        "    except (MissingExtraError, ModelPullError, OSError) as exc:\n        if shared:",
        "    except MissingExtraError as exc:\n        if shared:",
        ("tests/context/knowledge/test_knowledge_embeddings.py", "-k", "offline"),
    ),
    Mutant(
        "knowledge: `embedder: none` in YAML still loads the embedder",
        "src/raf/decl/agent/contexts.py",
        'options["embedder"] = None if config.embedder == "none" else config.embedder',
        'options["embedder"] = "auto" if config.embedder == "none" else config.embedder',
        ("tests/context/knowledge/test_knowledge_default_embedder.py", "-k", "opt_out"),
    ),
    Mutant(
        "TOML: dotted keys and headers not counted as depth",
        "src/raf/core/bounded_parse.py",
        "    check_toml_key_depth(code, file=file, limits=limits)\n",
        "",
        ("tests/decl/documents/test_hostile_documents.py", "-k", "each_limit"),
    ),
    Mutant(
        "idempotency: a retried write is written again",
        "src/raf/tools/files.py",
        '    if not isinstance(mark, dict) or mark.get("key") != key:\n        return None\n',
        "    return None\n",
        ("tests/core/test_idempotency.py",),
    ),
    # -- expressions
    Mutant(
        "expressions: no nesting limit",
        "src/raf/decl/powerfx/syntax.py",
        "    def expression(self, min_power: int) -> Node:\n"
        "        self.depth += 1\n"
        "        if self.depth > MAX_DEPTH:",
        "    def expression(self, min_power: int) -> Node:\n"
        "        self.depth += 1\n"
        "        if False:",
        ("tests/decl/powerfx/test_power_fx.py", "-k", "nesting"),
    ),
    Mutant(
        "expressions: no step budget",
        "src/raf/decl/powerfx/expressions.py",
        "        if self.steps > MAX_STEPS:",
        "        if False:",
        ("tests/decl/powerfx/test_power_fx.py", "-k", "step_budget"),
    ),
    Mutant(
        "expressions: text read not counted",
        "src/raf/decl/powerfx/expressions.py",
        "        self.read += sum(_text_read(v) for v in values)\n",
        "        self.read += 0\n",
        ("tests/decl/powerfx/test_power_fx.py", "-k", "long_text"),
    ),
    Mutant(
        "expressions: Substitute size unchecked",
        "src/raf/decl/powerfx/functions.py",
        "    if len(s) + s.count(o) * (len(n) - len(o)) > MAX_TEXT:",
        "    if False:",
        ("tests/decl/powerfx/test_power_fx.py", "-k", "substitute"),
    ),
    # -- the terminal, again: every command that prints a model's text
    Mutant(
        "terminal: raf eval's table printed raw",
        "src/raf/cli/eval.py",
        "        print(terminal_safe(report.table()))",
        "        print(report.table())",
        ("tests/cli/test_terminal_attacks.py", "-k", "eval"),
    ),
    Mutant(
        "terminal: raf chat's own lines quote raw text",
        "src/raf/cli/chat.py",
        '        sys.stdout.write(terminal_safe(text) + "\\n")',
        '        sys.stdout.write(text + "\\n")',
        ("tests/cli/test_terminal_attacks.py", "-k", "question"),
    ),
    Mutant(
        "terminal: raf run prints a question raw",
        "src/raf/cli/run.py",
        '        print(terminal_safe(f"raf: {pending[0].reason}"), file=sys.stderr)',
        '        print(f"raf: {pending[0].reason}", file=sys.stderr)',
        ("tests/cli/test_terminal_attacks.py", "-k", "question"),
    ),
    Mutant(
        "terminal: raf convert's errors printed raw",
        "src/raf/cli/convert.py",
        'print(terminal_safe(f"error: {problem}"), file=sys.stderr)',
        'print(f"error: {problem}", file=sys.stderr)',
        ("tests/cli/test_terminal_attacks.py", "-k", "convert"),
    ),
    Mutant(
        "terminal: raf memory validate's problems printed raw",
        "src/raf/cli/memory.py",
        '            print(terminal_safe(f"  {problem}"))',
        '            print(f"  {problem}")',
        ("tests/cli/test_terminal_attacks.py", "-k", "memory_validate"),
    ),
    Mutant(
        "terminal: raf validate names a workflow raw",
        "src/raf/cli/validate.py",
        '            print(terminal_safe(f"{file}: ok ({checked.summary})"))',
        '            print(f"{file}: ok ({checked.summary})")',
        ("tests/cli/test_terminal_attacks.py", "-k", "validate_names"),
    ),
    # -- the sandbox tests fail, never pass on a fallback, when bubblewrap is missing
    Mutant(
        "sandbox: bubblewrap reported missing",
        "src/raf/tools/sandbox.py",
        "    if bwrap and _probe([bwrap, *_PROBE_BWRAP], user=as_user):",
        "    if False:",
        ("tests/tools/test_shell.py", "tests/tools/test_code.py"),
    ),
    # -- the container sandbox
    Mutant(
        "container: network on by default",
        "src/raf/tools/sandbox.py",
        "    network: bool = False\n    read_only: bool = True\n",
        "    network: bool = True\n    read_only: bool = True\n",
        ("tests/tools/test_container_sandbox.py", "-k", "network or safe_defaults"),
    ),
    Mutant(
        "container: the root filesystem writable by default",
        "src/raf/tools/sandbox.py",
        "    network: bool = False\n    read_only: bool = True\n",
        "    network: bool = False\n    read_only: bool = False\n",
        ("tests/tools/test_container_sandbox.py", "-k", "read_only or safe_defaults"),
    ),
    Mutant(
        "container: a call's network ignores the sandbox's ceiling",
        "src/raf/tools/container.py",
        'network_mode="bridge" if network and box.network else "none",',
        'network_mode="bridge" if network else "none",',
        ("tests/tools/test_container_sandbox.py", "-k", "network"),
    ),
    Mutant(
        "container: a root user accepted",
        "src/raf/tools/sandbox.py",
        "        if self.user is not None and is_root_user(self.user):",
        "        if False:",
        ("tests/tools/test_container_sandbox.py", "-k", "safe_defaults or wrong_container"),
    ),
    Mutant(
        "container: a root-owned folder used as root",
        "src/raf/tools/container.py",
        "    if st.st_uid == 0:\n        return NOBODY_USER\n",
        "",
        ("tests/tools/test_container_sandbox.py", "-k", "root_owns"),
    ),
    Mutant(
        "container: path rules not mounted",
        "src/raf/tools/shell.py",
        "*mounts_from_bwrap([*git_guards(root), *guard.masks], under=root),",
        "*mounts_from_bwrap(git_guards(root), under=root),",
        ("tests/tools/test_container_sandbox.py", "-k", "path_rules or cannot_plant"),
    ),
    Mutant(
        "container: a workspace kept from changes mounted writable",
        "src/raf/tools/shell.py",
        "Bind(source=root, target=str(root), read_only=not writable),",
        "Bind(source=root, target=str(root), read_only=False),",
        ("tests/tools/test_container_sandbox.py", "-k", "keep_from_changes"),
    ),
    Mutant(
        "container: a finished, timed-out or cancelled call leaves its container",
        "src/raf/tools/container.py",
        "await asyncio.shield(asyncio.to_thread(self._remove, container))",
        "await asyncio.sleep(0)",
        ("tests/tools/test_container_sandbox.py", "-k", "timeout or cancelled"),
    ),
    # -- a test run leaves the docs' screenshots alone
    Mutant(
        "screenshots: written over docs/ui",
        "tests/serve/ui/browser.py",
        '    if os.environ.get("RAF_UPDATE_SCREENSHOTS") == "1":',
        "    if True:",
        ("tests/serve/ui/test_screenshots.py",),
    ),
    # -- worker threads
    Mutant(
        "threads: tool workers joined at exit",
        "src/raf/core/tool_threads.py",
        "threading.Thread(target=self._work, name=name, daemon=True).start()",
        "threading.Thread(target=self._work, name=name, daemon=False).start()",
        ("tests/core/test_tool_threads_process.py", "-k", "exit"),
    ),
    Mutant(
        "threads: a sealed batch holds the event loop until its sync calls end",
        "src/raf/core/tool_threads.py",
        "        with self._lock:\n            self.open = False\n",
        "        while self._running:\n            threading.Event().wait(0.001)\n"
        "        with self._lock:\n            self.open = False\n",
        ("tests/core/test_tool_threads.py", "-k", "never_holds"),
    ),
    Mutant(
        "threads: a forked child keeps the parent's pool",
        "src/raf/core/tool_threads.py",
        "    os.register_at_fork(after_in_child=_forget_pool_in_child)",
        "    pass",
        ("tests/core/test_tool_threads_process.py", "-k", "forked"),
    ),
    # -- a store outage: no session left busy, nothing of the store shown, a fast failure
    Mutant(
        "store outage: a lease not given back is forgotten",
        "src/raf/stores/leases.py",
        "            self.unreleased.add(self.session_id, self.holder, self._lapses)\n",
        "            pass\n",
        ("tests/stores/test_store_failures.py",),
    ),
    Mutant(
        "store outage: a lease the store failed to take is never given back",
        "src/raf/stores/leases.py",
        "self.unreleased.add(self.session_id, self.holder, time.monotonic() + self.seconds)",
        "pass",
        ("tests/stores/test_store_failures.py",),
    ),
    Mutant(
        "store outage: a run waits for a lease its own process gave up",
        "src/raf/stores/leases.py",
        "        if self.unreleased is not None and self.unreleased.holds("
        "self.session_id, holder):\n"
        "            return True\n",
        "",
        ("tests/stores/test_store_failures.py",),
    ),
    Mutant(
        "store outage: a store call waits as long as the driver does",
        "src/raf/stores/timed.py",
        "async with asyncio.timeout(self.timeout):",
        "async with asyncio.timeout(None):",
        ("tests/stores/test_store_failures.py",),
    ),
    Mutant(
        "store outage: SQLite's own errors escape the store",
        "src/raf/stores/sessions.py",
        "        except (sqlite3.Error, OSError) as exc:\n"
        '            raise SessionStoreError(f"session store {self.path}: {exc}") from None\n',
        "        except ZeroDivisionError as exc:\n"
        '            raise SessionStoreError(f"session store {self.path}: {exc}") from None\n',
        ("tests/stores/test_store_failures.py", "tests/serve/test_store_failures_served.py"),
    ),
    Mutant(
        "store outage: a failed lease is the client's 400",
        "src/raf/serve/hosting.py",
        "            await self._give_up(active)\n            raise store_failure(exc) from None\n",
        "            await self._give_up(active)\n"
        '            raise ServeError(400, "invalid_session_id", str(exc)) from None\n',
        ("tests/serve/test_store_failures_served.py",),
    ),
    Mutant(
        "store outage: clients read the store's own message",
        "src/raf/serve/requests.py",
        "        message = STORE_UNAVAILABLE\n",
        "        message = str(exc)\n",
        (
            "tests/serve/test_store_failures_served.py",
            "tests/serve/openai/test_openai_responses.py",
        ),
    ),
    Mutant(
        "store outage: /ready names the store",
        "src/raf/serve/native/routes.py",
        '"message": STORE_UNAVAILABLE}',
        '"message": str(exc)}',
        ("tests/serve/test_store_failures_served.py",),
    ),
    # -- hosted tools' secrets and approvals
    Mutant(
        "hosted mcp: an error quoting the tools keeps the header values",
        "src/raf/clients/openai/responses.py",
        "        error.args = (redact(str(error.args[0]), hidden), *error.args[1:])",
        "        error.args = (str(error.args[0]), *error.args[1:])",
        ("tests/clients/test_hosted_mcp.py", "-k", "headers"),
    ),
    Mutant(
        "hosted mcp: calls run without a person's approval by default",
        "src/raf/clients/hosted_tools.py",
        'require_approval: Literal["never", "always"] | dict[str, Any] = "always",',
        'require_approval: Literal["never", "always"] | dict[str, Any] = "never",',
        ("tests/clients/test_hosted_mcp.py",),
    ),
    Mutant(
        "hosted mcp: a server_url's tokens are not secrets",
        "src/raf/clients/hosted_tools.py",
        '        values += url_secrets(spec["server_url"])\n',
        "        pass\n",
        ("tests/clients/test_hosted_mcp.py", "-k", "server_url"),
    ),
    Mutant(
        "hosted mcp: a repr shows the server_url as given",
        "src/raf/clients/hosted_tools.py",
        '        shown["server_url"] = shown_url(shown["server_url"])',
        "        pass",
        ("tests/clients/test_hosted_mcp.py", "-k", "server_url"),
    ),
    Mutant(
        "hosted mcp: the approval text names the server_url as given",
        "src/raf/clients/hosted_tools.py",
        "        where = shown_url(url) if isinstance(url, str)",
        "        where = url if isinstance(url, str)",
        ("tests/clients/test_hosted_mcp.py", "-k", "server_url or secret_url"),
    ),
    Mutant(
        "hosted mcp: a server_url's query values are not secrets",
        "src/raf/clients/hosted_urls.py",
        "        if value:\n            found.append(value)\n",
        "",
        ("tests/clients/test_hosted_mcp.py", "-k", "server_url"),
    ),
    Mutant(
        "hosted mcp: every path segment counts as a plain word",
        "src/raf/clients/hosted_urls.py",
        "    return _PLAIN.fullmatch(segment) is not None",
        "    return True",
        ("tests/clients/test_hosted_mcp.py", "-k", "server_url"),
    ),
    Mutant(
        "mcp requireSpecific: a tool in neither list runs without approval",
        "src/raf/decl/documents/dialects/tools.py",
        'per_tool: dict[str, str] = {"*": "always"}',
        "per_tool: dict[str, str] = {}",
        ("tests/decl/test_mcp_approval_modes.py",),
    ),
    Mutant(
        "mcp per-tool approval: the default for unlisted tools is ignored",
        "src/raf/tools/mcp/config.py",
        'unlisted = self.approval_mode.get("*", "never")',
        'unlisted = "never"',
        ("tests/decl/test_mcp_approval_modes.py",),
    ),
    # -- paths that run code later, and write rules on paths a command creates
    Mutant(
        "runs later: a new .git or .hg folder may be made",
        "src/raf/tools/scope/runs_later.py",
        "        if not rest or rest[0] in code:\n",
        "        if rest and rest[0] in code:\n",
        ("tests/tools/test_command_plants.py",),
    ),
    Mutant(
        "runs later: .envrc and editor settings may be written",
        "src/raf/tools/scope/runs_later.py",
        "        if part in TOOL_CONFIG:\n            return True\n",
        "",
        ("tests/tools/test_command_plants.py", "-k", "tool_settings or file_tools"),
    ),
    Mutant(
        "runs later: file tools may create a .git folder on the way to a file",
        "src/raf/tools/workspace.py",
        "return runs_code_later(rel) or creates_vcs_folder(self.real_root, rel)",
        "return runs_code_later(rel)",
        ("tests/tools/test_command_plants.py", "-k", "file_tools"),
    ),
    Mutant(
        "command guard: nothing is checked after a command",
        "src/raf/tools/command_guard.py",
        "            found = self._changed()\n",
        "            found: list[tuple[str, str]] = []\n",
        ("tests/tools/test_command_plants.py", "-k", "nested or write_deny or tool_settings"),
    ),
    Mutant(
        "command guard: no read-only stand-ins at the root",
        "src/raf/tools/command_guard.py",
        "        stand_ins = _place_stand_ins(scope.real_root)\n",
        "        stand_ins: list[Path] = []\n",
        ("tests/tools/test_command_plants.py", "-k", "repository_that"),
    ),
    Mutant(
        "command guard: a nested repository's folder is not walked for its config",
        "src/raf/tools/command_guard.py",
        "                watched[rel] = _identity(st)\n                keep.append(name)\n",
        "                watched[rel] = _identity(st)\n",
        ("tests/tools/test_command_plants.py", "-k", "existing_nested"),
    ),
    Mutant(
        "command guard: a write-approve rule does not hold every command",
        "src/raf/tools/shell.py",
        "        if writes_need_approval(scope):\n            return True",
        "        if False:\n            return True",
        ("tests/tools/test_command_plants.py", "-k", "approve"),
    ),
    # -- pinned messages: kept word for word by compression, counted first, stored
    Mutant(
        "pins: compression cuts a pinned message like any other",
        "src/raf/context/compression/pins.py",
        "        if has_pins(unit.messages):\n",
        "        if False:\n",
        ("tests/context/compression/test_compression_pins.py", "-k", "not 300"),
    ),
    Mutant(
        "pins: a pinned tool result is parted from its call",
        "src/raf/context/compression/pins.py",
        "        if has_pins(unit.messages):\n",
        "        if unit.messages[0].pinned:\n",
        ("tests/context/compression/test_compression_pins.py", "-k", "not 300"),
    ),
    Mutant(
        "pins: pinned content is not counted against the budget",
        "src/raf/context/compression/pins.py",
        "        return budget - self.tokens\n",
        "        return budget\n",
        ("tests/context/compression/test_compression_pins.py", "-k", "not 300"),
    ),
    Mutant(
        "pins: pinned content over the budget is dropped",
        "src/raf/context/compression/pins.py",
        "        return split.merge(split.rest_when_full())\n    kept = shorten(",
        "        return split.rest_when_full()\n    kept = shorten(",
        ("tests/context/compression/test_compression_pins.py", "-k", "not 300"),
    ),
    Mutant(
        "pins: the summariser summarises pinned messages away",
        "src/raf/context/compression/summarize.py",
        "        return await keep_pinned(self._shorten, messages, budget, counter)\n",
        "        return await self._shorten(messages, budget, counter)\n",
        ("tests/context/compression/test_compression_pins.py", "-k", "summary"),
    ),
    Mutant(
        "pins: a message's pin is not stored",
        "src/raf/core/messages.py",
        '        if self.pinned:\n            out["pinned"] = True\n',
        "",
        ("tests/stores/test_pinned_sessions.py", "-k", "sqlite or json"),
    ),
    Mutant(
        "pins: a pin made on the native API is not stored",
        "src/raf/serve/hosting.py",
        "            result = edit(session)\n            await self.store.save(session)\n",
        "            result = edit(session)\n",
        ("tests/serve/native/test_native_pins.py", "-k", "300"),
    ),
    # -- runs as resources and their webhooks
    Mutant(
        "runs: another caller's run is read, followed and cancelled",
        "src/raf/serve/runs.py",
        " or not Tenant(owner).owns(record.owner):",
        ":",
        ("tests/serve/test_runs.py", "-k", "another_callers"),
    ),
    Mutant(
        "runs: a webhook to a private address is taken",
        "src/raf/serve/webhooks.py",
        "            await outbound.check_url(url, self.policy)\n",
        "            pass\n",
        ("tests/serve/test_runs.py", "-k", "bad_run_requests"),
    ),
    Mutant(
        "runs: a webhook is taken with no secret to sign it",
        "src/raf/serve/webhooks.py",
        "        if self.secret is None:\n",
        "        if False:\n",
        ("tests/serve/test_runs.py", "-k", "without_a_webhook_secret"),
    ),
    Mutant(
        "runs: the webhook signature does not cover the body",
        "src/raf/serve/webhooks.py",
        'f"{at}.".encode() + body',
        'f"{at}.".encode()',
        ("tests/serve/test_webhooks.py",),
    ),
    Mutant(
        "runs: a queued run does not wait for those queued before it",
        "src/raf/serve/hosting.py",
        "            if not ahead and self.runs.get(active.key) is None:\n",
        "            if self.runs.get(active.key) is None:\n",
        ("tests/serve/test_runs_fleet.py", "-k", "first_come and sqlite"),
    ),
    Mutant(
        "a2a push: a push URL to a loopback address is taken",
        "src/raf/serve/a2a/push.py",
        "            await outbound.check_url(url, policy)\n",
        "            pass\n",
        ("tests/serve/a2a/test_a2a_push.py", "-k", "loopback"),
    ),
    # -- OpenAPI tools
    Mutant(
        "openapi: an invalid call is sent without its arguments checked",
        "src/raf/tools/openapi/operation.py",
        "        if problems is not None:  # checked before any request: nothing is sent\n",
        "        if False:\n",
        ("tests/tools/openapi/test_openapi_arguments.py",),
    ),
    Mutant(
        "openapi: an argument the operation does not take passes",
        "src/raf/tools/openapi/operation.py",
        '{**self.parameters, "additionalProperties": False}',
        "dict(self.parameters)",
        ("tests/tools/openapi/test_openapi_arguments.py",),
    ),
    Mutant(
        "local embedder: a model file whose SHA-256 does not match is kept",
        "src/raf/clients/local/model_store.py",
        "    if digest.hexdigest() != source.sha256:\n",
        "    if False:\n",
        ("tests/clients/local/test_embedder.py",),
    ),
    Mutant(
        "local embedder: a cached file is loaded without its recorded checksum",
        "src/raf/clients/local/embedder.py",
        "    if is_pulled(source):\n",
        "    if model_path(source).exists():\n",
        ("tests/clients/local/test_embedder.py",),
    ),
    # -- nothing a client sends runs unbounded on the event loop
    Mutant(
        "schema limits: subschemas not counted",
        "src/raf/core/schema_limits.py",
        "            if subschemas > limits.max_subschemas:\n",
        "            if False:\n",
        ("tests/core/test_schema_limits.py",),
    ),
    Mutant(
        "schema limits: nesting not bounded",
        "src/raf/core/schema_limits.py",
        "        if depth >= limits.max_depth:\n",
        "        if False:\n",
        ("tests/core/test_schema_limits.py",),
    ),
    Mutant(
        "schema limits: pattern sizes not added up",
        "src/raf/core/schema_limits.py",
        "            if pattern_nodes > limits.max_pattern_nodes:\n",
        "            if False:\n",
        ("tests/core/test_schema_limits.py",),
    ),
    Mutant(
        "schema patterns: matched with re, without a time limit",
        "src/raf/core/schema_patterns.py",
        "        return search_within(schema_pattern(pattern), text)\n",
        '        return __import__("re").search(pattern, text) is not None\n',
        ("tests/core/test_schema_limits.py", "-k", "backtracking"),
    ),
    Mutant(
        "question entities: an age read with spaces split between two \\s*",
        "src/raf/decl/workflow/questions.py",
        r'r"^\s*+(\d{1,3}(?:\.\d+)?)\s*+(?:years?|yrs?|y)?(?:\s*+old)?\s*+$"',
        r'r"^\s*(\d{1,3}(?:\.\d+)?)\s*(?:years?|yrs?|y)?(?:\s*old)?\s*$"',
        ("tests/serve/test_loop_stays_free.py", "-k", "age_question"),
    ),
    Mutant(
        "validate: outputSchema not checked as run checks it",
        "src/raf/decl/documents/semantic_checks.py",
        "    problems += _output_schema_problems(loaded)\n",
        "",
        ("tests/decl/test_validate_build.py", "-k", "refuses_an_output"),
    ),
    Mutant(
        "serving: a structured-output failure is a 500",
        "src/raf/serve/requests.py",
        "    if isinstance(exc, OutputValidationError):",
        "    if False:",
        ("tests/serve/test_structured_failures.py",),
    ),
    # -- tools a client declares
    Mutant(
        "client tools: a client's call run on the server",
        "src/raf/agent/run/steps.py",
        "        if client_side(tools.get(call.name)):\n            handed_back.append(call)\n",
        "        if False:\n            handed_back.append(call)\n",
        ("tests/agent/test_client_tools.py",),
    ),
    # -- guardrails and validators wherever an agent is built or runs
    Mutant(
        "guardrails: Agent(...) drops the guardrails it is given",
        "src/raf/agent/agent.py",
        "        if input_guardrails or output_guardrails or tool_guardrails:\n",
        "        if False:\n",
        ("tests/agent/test_constructor_options.py",),
    ),
    Mutant(
        "guardrails: a handoff member is rebuilt without its own middleware",
        "src/raf/orchestrations/handoff.py",
        "        return member.with_tools(tools)\n",
        "        return Agent(chat_client=member.leaf_client, name=member.name,\n"
        "                     tools=[*member.tools, *tools])\n",
        ("tests/orchestrations/test_handoff_habits.py", "-k", "guardrails"),
    ),
    Mutant(
        "validators: an output validator is never called",
        "src/raf/agent/run/steps.py",
        "                if validators:\n                    value = await validate_output(",
        "                if False:\n                    value = await validate_output(",
        ("tests/agent/test_output_validators.py",),
    ),
    # -- workflows served like agents
    Mutant(
        "served workflows: every run on the one workflow object",
        "src/raf/serve/workflows.py",
        "        workflow = self._idle.pop() if self._idle else self.build()\n",
        "        workflow = self.template\n",
        ("tests/serve/test_served_workflow_pool.py", "-k", "own or ui_starts"),
    ),
    Mutant(
        "served workflows: a workflow object's runs not taken in turn",
        "src/raf/serve/workflows.py",
        "            async with self._turn:\n                yield self.template\n",
        "            yield self.template\n",
        ("tests/serve/test_served_workflow_pool.py", "-k", "in_turn"),
    ),
    Mutant(
        "served workflows: checkpoints in each workflow's own store, not the shared one",
        "src/raf/serve/workflows.py",
        "                checkpoint_store=self.checkpoint_store,\n",
        "                checkpoint_store=None,\n",
        ("tests/serve/test_served_workflow_pool.py", "-k", "own"),
    ),
    # -- the keyless model's tool choice: the file the user names, nothing when nothing fits
    Mutant(
        "local tool choice: a named file may be replaced by another that exists",
        "src/raf/clients/local/choice.py",
        "        return self.hits(candidates) or candidates\n",
        "        return candidates\n",
        ("tests/clients/local/test_choice.py", "-k", "path_the_user_names"),
    ),
    Mutant(
        "local tool choice: a tool is called however far its meaning is from the question",
        "src/raf/clients/local/choice.py",
        "        pool = [i for i in range(len(tools)) if scores[i] >= threshold]\n",
        "        pool = list(range(len(tools)))\n",
        ("tests/clients/local/test_choice.py", "-k", "ranked_by_meaning"),
    ),
)


def apply(mutant: Mutant) -> tuple[Path, bytes]:
    """Write the mutant into its file; the file's path and its original bytes."""
    path = ROOT / mutant.file
    original = path.read_bytes()
    text = original.decode("utf-8")
    found = text.count(mutant.old)
    if found != 1:
        raise LookupError(f"{mutant.file}: the snippet occurs {found} times, not once")
    path.write_bytes(text.replace(mutant.old, mutant.new).encode("utf-8"))
    return path, original


def run(mutant: Mutant, timeout: float) -> str:
    """'killed', 'survived', or why the mutant could not be judged."""
    try:
        path, original = apply(mutant)
    except LookupError as exc:
        return f"stale ({exc})"
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(
            [*command, *mutant.tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "killed (the tests timed out)"
    finally:
        path.write_bytes(original)
    lines = (done.stdout + done.stderr).strip().splitlines()
    # pytest's summary line; a library may log after it (DBOS does, from its threads)
    summaries = [line for line in lines if re.search(r"\b\d+ (failed|passed|errors?)\b", line)]
    summary = summaries[-1] if summaries else ""
    if done.returncode == 0:
        return "survived"
    if done.returncode == 1 and " failed" in summary and " error" not in summary:
        return "killed"  # a test failed; a fixture that broke (an error) proves nothing
    return f"not judged (pytest exit {done.returncode}: {' | '.join(lines[-3:])})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("match", nargs="*", help="run the mutants whose name has one of these")
    parser.add_argument("--list", action="store_true", help="name the mutants and stop")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.match or any(w in m.name for w in args.match)]
    if args.list:
        for m in chosen:
            print(f"{m.name}  [{m.file}]  {' '.join(m.tests)}")
        return 0
    outcomes: dict[str, int] = {}
    for mutant in chosen:
        started = time.monotonic()
        outcome = run(mutant, args.timeout)
        word = outcome.split(" ", 1)[0]
        outcomes[word] = outcomes.get(word, 0) + 1
        print(f"{outcome:<9}  {mutant.name}  ({time.monotonic() - started:.0f} s)", flush=True)
    print(", ".join(f"{n} {w}" for w, n in sorted(outcomes.items())))
    if outcomes.get("stale") or outcomes.get("not"):
        return 2
    return 1 if outcomes.get("survived") else 0


if __name__ == "__main__":
    sys.exit(main())
