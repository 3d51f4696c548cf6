"""Drives `workmem mcp` with the official Python MCP client (PyPI `mcp`).

Run by crates/workmem-cli/tests/mcp.rs with the interpreter named by
WORKMEM_TEST_PYTHON. Each scenario asserts as it goes and exits non-zero on
the first failure; the Rust test then checks the files on disk.

    python mcp_client.py scenario   WORKMEM_BIN PROJECT
    python mcp_client.py concurrent WORKMEM_BIN PROJECT SERVERS FACTS IDS_OUT
    python mcp_client.py large      WORKMEM_BIN PROJECT REPORT_OUT
    python mcp_client.py unavailable WORKMEM_BIN DIR EXPECTED
    python mcp_client.py paging     WORKMEM_BIN PROJECT
    python mcp_client.py damage     WORKMEM_BIN PROJECT
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime

from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = {"write_memory", "get_context", "list_recent_facts", "list_conflicts", "search_memory"}
MEMORY_URI = "workmem://memory"
CONTEXT_URI = "workmem://context"
PENDING_HEADING = "# Pending Keyed Facts (recorded, not in the curated memory)"
# The most characters of any tool result's text or resource's text.
MAX_RESULT_CHARS = 25_000


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def server(binary, project):
    return StdioServerParameters(command=binary, args=["-C", project, "mcp"], cwd=project)


def instant(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def call_ok(session, name, arguments):
    result = await session.call_tool(name, arguments)
    check(not result.is_error, f"{name}({arguments}) failed: {text_of(result)}")
    return result


async def call_error(session, name, arguments, field):
    """Calls a tool that must fail with an isError result naming `field`."""
    result = await session.call_tool(name, arguments)
    message = text_of(result)
    check(result.is_error, f"{name}({arguments}) should fail on {field}, got {message!r}")
    check(f"invalid {field}" in message, f"error for {field} does not name it: {message!r}")
    return message


async def read_text(session, uri):
    result = await session.read_resource(uri)
    check(len(result.contents) == 1, f"{uri}: expected one content, got {result.contents}")
    content = result.contents[0]
    check(str(content.uri) == uri, f"{uri}: content names {content.uri}")
    return content.text


def cli(binary, project, *args):
    done = subprocess.run([binary, "-C", project, *args], capture_output=True, text=True, timeout=120)
    check(done.returncode == 0, f"workmem {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


async def scenario(binary, project):
    async with stdio_client(server(binary, project)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "workmem", f"server name {init.server_info.name}")
            check(init.capabilities.tools is not None, "tools capability missing")
            check(init.capabilities.resources is not None, "resources capability missing")

            tools = (await session.list_tools()).tools
            names = {tool.name for tool in tools}
            check(names == EXPECTED_TOOLS and len(tools) == 5, f"tools: {sorted(names)}")
            for tool in tools:
                # Raises SchemaError unless the schema is valid Draft 2020-12.
                Draft202012Validator.check_schema(tool.input_schema)
                check(tool.title, f"{tool.name}: no title")
                hints = tool.annotations
                check(hints is not None and hints.open_world_hint is False, f"{tool.name}: {hints}")
                check(hints.read_only_hint is (tool.name != "write_memory"), f"{tool.name}: {hints}")
                # The three tools that return structuredContent describe it;
                # the SDK validates every result against it.
                structured = tool.name != "get_context"
                check((tool.output_schema is not None) == structured, f"{tool.name}: {tool.output_schema}")
                if structured:
                    Draft202012Validator.check_schema(tool.output_schema)
                    check(tool.output_schema["type"] == "object", f"{tool.name}: {tool.output_schema}")
            write_schema = next(tool for tool in tools if tool.name == "write_memory").input_schema
            props = write_schema["properties"]
            check(props["kind"]["enum"] == ["decision", "convention", "pitfall", "outcome"], f"kind: {props['kind']}")
            check(props["importance"]["minimum"] == 1 and props["importance"]["maximum"] == 5, "importance range")
            check(props["memory_key"]["pattern"] == "^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$", "memory_key pattern")
            check(props["memory_key"]["maxLength"] == 120, "memory_key maxLength")
            check(sorted(write_schema["required"]) == ["content", "importance", "kind"], "required fields")

            resources = (await session.list_resources()).resources
            uris = sorted(str(resource.uri) for resource in resources)
            check(uris == [CONTEXT_URI, MEMORY_URI], f"resources: {uris}")

            # A fresh workspace: the memory resource says so, like get_context.
            empty = await read_text(session, MEMORY_URI)
            check(empty == "(no workspace memory yet)", f"empty memory resource: {empty!r}")
            empty_context = text_of(await call_ok(session, "get_context", {}))
            check(empty_context == empty, f"empty context: {empty_context!r}")

            # Valid writes.
            keyed = await call_ok(session, "write_memory", {
                "content": "Use WAL mode for the SQLite cache",
                "kind": "decision",
                "importance": 5,
                "memory_key": "cache.journal-mode",
                "evidence": {"file": "src/cache.rs", "commit": "abc123"},
            })
            keyed_id = keyed.structured_content["fact_id"]
            check(keyed_id in text_of(keyed), "fact id missing from the text content")
            # The result says what happens to a keyed fact, and get_context
            # shows it at once, as a claim.
            note = keyed.structured_content["note"]
            check(keyed.structured_content["memory_key"] == "cache.journal-mode", f"receipt: {keyed}")
            check("claim" in note and "Pending Keyed Facts" in note and "30 days" in note, f"note: {note!r}")
            pending_context = text_of(await call_ok(session, "get_context", {}))
            check(re.fullmatch(re.escape(f"{PENDING_HEADING}\n\n- [decision] cache.journal-mode: Use WAL mode for the "
                                         "SQLite cache (") + r"\d{4}-\d{2}-\d{2}\)", pending_context),
                  f"pending context: {pending_context!r}")
            off = text_of(await call_ok(session, "get_context", {"pending": 0}))
            check(off == "(no workspace memory yet)", f"pending 0: {off!r}")
            write_tool = next(tool for tool in tools if tool.name == "write_memory")
            check("Pending Keyed Facts" in write_tool.description, "write_memory's description says nothing of keyed facts")
            outcome = await call_ok(session, "write_memory", {
                "content": "Ran the migration on staging",
                "kind": "outcome",
                "importance": 2,
            })
            outcome_id = outcome.structured_content["fact_id"]
            # An integral float is an integer (JSON Schema says so; Python
            # pipelines send it); a fraction is refused below.
            whole = await call_ok(session, "write_memory", {
                "content": "Importance arrived as a float", "kind": "outcome", "importance": 3.0,
            })
            whole_id = whole.structured_content["fact_id"]
            check(outcome_id != keyed_id, "fact ids repeat")

            # Invalid input: an isError result naming the field, nothing written.
            base = {"content": "Ship it", "kind": "decision", "importance": 3}
            await call_error(session, "write_memory", {**base, "importance": 9}, "importance")
            await call_error(session, "write_memory", {**base, "importance": 2.5}, "importance")
            await call_error(session, "write_memory", {**base, "kind": "idea"}, "kind")
            await call_error(session, "write_memory", {**base, "memory_key": "Not A Key!"}, "memory_key")
            await call_error(session, "write_memory", {**base, "memory_key": "k" * 121}, "memory_key")
            await call_error(session, "write_memory", {"kind": "decision", "importance": 3}, "content")
            await call_error(session, "write_memory", {**base, "content": "   "}, "content")
            await call_error(session, "write_memory", {**base, "evidence": {"line": 7}}, "evidence")
            await call_error(session, "write_memory", {**base, "source": "user"}, "source")
            await call_error(session, "get_context", {"recent": -1}, "recent")
            await call_error(session, "list_recent_facts", {"limit": 0}, "limit")
            await call_error(session, "list_conflicts", {"status": "all"}, "status")

            # The secret guard applies to every write.
            secret = await call_error(session, "write_memory", {
                **base, "content": "deploy key is AKIAIOSFODNN7EXAMPLE"}, "content")
            check("secret" in secret and "AKIAIOSFODNN7EXAMPLE" not in secret, f"secret message: {secret!r}")
            await call_error(session, "write_memory", {
                **base, "evidence": {"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}, "evidence")

            recent = (await call_ok(session, "list_recent_facts", {"limit": 50})).structured_content["facts"]
            check([f["fact_id"] for f in recent] == [keyed_id, outcome_id, whole_id], f"recent facts: {recent}")
            check(recent[2]["importance"] == 3, f"importance 3.0 stored as {recent[2]['importance']!r}")
            await call_error(session, "get_context", {"recent": 2.5}, "recent")
            floated = (await call_ok(session, "list_recent_facts", {"limit": 2.0})).structured_content["facts"]
            check([f["fact_id"] for f in floated] == [outcome_id, whole_id], f"limit 2.0: {floated}")
            check(all(f["source"] == "model_tool" for f in recent), "source is not model_tool")
            check(recent[0]["memory_key"] == "cache.journal-mode", "memory_key not stored")
            check(recent[0]["evidence"] == {"commit": "abc123", "file": "src/cache.rs"}, "evidence not stored")
            limited = (await call_ok(session, "list_recent_facts", {"limit": 1})).structured_content["facts"]
            check([f["fact_id"] for f in limited] == [whole_id], f"limit 1: {limited}")

            conflicts = (await call_ok(session, "list_conflicts", {})).structured_content["conflicts"]
            check(conflicts == [], f"no conflicts expected yet: {conflicts}")

            # A human distills through the CLI (facts count as aged at once),
            # and queues a tie the model cannot settle.
            for content in ("Use Postgres", "Use SQLite"):
                cli(binary, project, "remember", content, "-k", "decision", "-i", "4",
                    "--key", "db.engine", "--at", "2026-01-01T00:00:00Z", "--source", "user")
            report = json.loads(cli(binary, project, "--json", "distill", "--min-age-days", "0"))
            check(report["created"] == 1 and report["queued_conflicts"] == 1, f"distill report: {report}")

            context = text_of(await call_ok(session, "get_context", {}))
            check("## Decisions" in context, f"context: {context!r}")
            check("- Use WAL mode for the SQLite cache (seen 1x; evidence: 1)" in context, f"context: {context!r}")
            check("# Recent Workspace Facts" in context and "[outcome] Ran the migration on staging" in context,
                  f"context: {context!r}")
            # The tied candidates are claims: listed under their heading only.
            curated_and_recent, _, pending = context.partition(PENDING_HEADING)
            check("Use Postgres" not in curated_and_recent and "Use SQLite" not in curated_and_recent,
                  "a conflict candidate leaked into the curated part")
            check("- [decision] db.engine: Use Postgres (2026-01-01)" in pending
                  and "- [decision] db.engine: Use SQLite (2026-01-01)" in pending, f"pending: {pending!r}")
            check("cache.journal-mode" not in pending, "a promoted fact is still pending")
            bare = text_of(await call_ok(session, "get_context", {"recent": 0}))
            check("Ran the migration" not in bare, f"recent 0 still lists facts: {bare!r}")

            listed = (await call_ok(session, "list_conflicts", {})).structured_content
            conflicts = listed["conflicts"]
            check(listed["open_cases"] == 1 and "next_cursor" not in listed, f"list: {listed}")
            check(len(conflicts) == 1 and conflicts[0]["memory_key"] == "db.engine", f"conflicts: {conflicts}")
            check(sorted(conflicts[0]["candidates"]) == ["Use Postgres", "Use SQLite"], f"candidates: {conflicts}")
            detail = (await call_ok(session, "list_conflicts", {"conflict_id": conflicts[0]["conflict_id"]}))
            case = detail.structured_content["conflict"]
            check(case["status"] == "open" and case["revision"] == 1, f"detail: {case}")
            contents = sorted(c["content"] for c in case["candidates"])
            check(contents == ["Use Postgres", "Use SQLite"], f"candidates: {contents}")
            check(all(c["candidate_id"].startswith("candidate-") for c in case["candidates"]), f"detail: {case}")
            await call_error(session, "list_conflicts", {"conflict_id": "conflict-0000000000000000"}, "conflict_id")
            await call_error(session, "list_conflicts", {"cursor": "not-a-cursor"}, "cursor")

            memory = await read_text(session, MEMORY_URI)
            check(memory == cli(binary, project, "memory"), "memory resource differs from `workmem memory`")
            check(memory.startswith("# Workspace Memory\n"), f"memory: {memory!r}")
            check("- Use WAL mode for the SQLite cache" in memory, f"memory: {memory!r}")
            resource_context = await read_text(session, CONTEXT_URI)
            check(resource_context == context, "context resource differs from get_context")
            check(resource_context.rstrip("\n") == cli(binary, project, "context").rstrip("\n"),
                  "context resource differs from `workmem context`")

    print("scenario: ok")


def within_bound(name, result):
    """Checks one tool result against the bound; returns its text's size."""
    text = text_of(result)
    check(len(text) <= MAX_RESULT_CHARS, f"{name}: {len(text)} characters of text")
    if result.structured_content is not None:
        structured = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        check(len(structured) <= MAX_RESULT_CHARS, f"{name}: {len(structured)} characters of structuredContent")
    return len(text)


async def bounded_call(session, sizes, name, arguments):
    result = await call_ok(session, name, arguments)
    sizes.setdefault(name, []).append(within_bound(name, result))
    return result


async def large(binary, project, report_out):
    """Every result and resource of a large workspace stays within the
    bound, and paging lists every item of its snapshot exactly once, while
    facts are appended (some backdated into the window) and a listed case
    is resolved between pages."""
    sizes = {}
    snapshot = json.loads(cli(binary, project, "--json", "facts", "--recent", "1000"))
    snapshot_ids = [fact["fact_id"] for fact in snapshot]
    open_ids = sorted(case["conflict_id"] for case in json.loads(cli(binary, project, "--json", "conflicts")))
    check(len(open_ids) >= 200, f"only {len(open_ids)} open cases")
    async with stdio_client(server(binary, project)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for uri in (MEMORY_URI, CONTEXT_URI):
                text = await read_text(session, uri)
                check(len(text) <= MAX_RESULT_CHARS, f"{uri}: {len(text)} characters")
                sizes.setdefault(uri, []).append(len(text))
            memory = await read_text(session, MEMORY_URI)
            check(memory.startswith("# Workspace Memory\n"), f"memory: {memory[:80]!r}")
            last_line = memory.rstrip("\n").rsplit("\n", 1)[-1]
            check(last_line.startswith("- (") and last_line.endswith(" more entries not shown: run `workmem memory` or `workmem search`)"),
                  f"memory resource ends with {last_line!r}")
            for arguments in ({}, {"recent": 1000, "pending": 100}):
                context = text_of(await bounded_call(session, sizes, "get_context", arguments))
                # The curated part alone fills the budget here.
                check(" more entries not shown: run `workmem memory` or `workmem search`)" in context, f"get_context {arguments}")


            # Facts, newest page first, while new facts arrive: one now
            # (newer than the window: never listed) and one backdated into
            # what is left of the window (listed at most once).
            listed, pages, cursor, backdated, previous_oldest = [], 0, None, [], None
            while True:
                arguments = {"limit": 1000} if cursor is None else {"limit": 1000, "cursor": cursor}
                page = (await bounded_call(session, sizes, "list_recent_facts", arguments)).structured_content
                pages += 1
                ids = [fact["fact_id"] for fact in page["facts"]]
                # Oldest first within a page; each page older than the last.
                order = [(instant(f["recorded_at"]), f["fact_id"]) for f in page["facts"]]
                check(order == sorted(order), f"page {pages} is not oldest first")
                check(previous_oldest is None or order[-1] < previous_oldest, f"page {pages} is not older")
                previous_oldest = order[0]
                listed.extend(ids)
                cursor = page.get("next_cursor")
                if cursor is None:
                    break
                await bounded_call(session, sizes, "write_memory", {
                    "content": f"Appended while paging, page {pages}", "kind": "outcome", "importance": 2})
                oldest = page["facts"][0]["recorded_at"]
                fact_id = f"backdated-{pages}"
                cli(binary, project, "remember", f"Backdated into the window, page {pages}", "--at", oldest,
                    "--id", fact_id, "-q")
                backdated.append(fact_id)
                check(pages < 100, "list_recent_facts never ends")
            check(len(listed) == len(set(listed)), "a fact was listed twice")
            missing = set(snapshot_ids) - set(listed)
            check(not missing, f"{len(missing)} facts of the window were not listed")
            extra = set(listed) - set(snapshot_ids)
            check(extra <= set(backdated), f"listed facts outside the window: {sorted(extra - set(backdated))[:5]}")
            check(pages > 1, "1000 facts fit in one page: the test shows nothing")

            # A keyed fact just written is in the context, however large the
            # memory: the facts are chosen before the curated part.
            await bounded_call(session, sizes, "write_memory", {
                "content": "Pin the toolchain to 1.89", "kind": "decision", "importance": 4,
                "memory_key": "toolchain.pin-version"})
            context = text_of(await bounded_call(session, sizes, "get_context", {}))
            check("- [decision] toolchain.pin-version: Pin the toolchain to 1.89 (" in context,
                  "a keyed fact just written is not in get_context")

            # Search: bounded pages to the end, every hit once; entries first.
            seen, search_pages, cursor, kinds = set(), 0, None, []
            while True:
                arguments = {"query": "build", "limit": 50, "in": "all"}
                if cursor is not None:
                    arguments["cursor"] = cursor
                page = (await bounded_call(session, sizes, "search_memory", arguments)).structured_content
                search_pages += 1
                for hit in page["hits"]:
                    check(hit["id"] not in seen, f"search hit {hit['id']} twice")
                    seen.add(hit["id"])
                    check("**" in hit["snippet"], f"unmarked snippet {hit['snippet']!r}")
                    kinds.append(hit["type"])
                cursor = page.get("next_cursor")
                if cursor is None or search_pages >= 40:
                    break
            check(search_pages > 1 and len(seen) > 50, f"search: {search_pages} pages, {len(seen)} hits")
            check(kinds == sorted(kinds, key=lambda t: t != "entry"), "facts before entries")
            await call_error(session, "search_memory", {"query": "x" * 10240}, "query")
            await call_error(session, "search_memory", {"query": "build", "cursor": "c00000001" + "0" * 16}, "cursor")

            # Open cases, page by page, while one already listed is resolved.
            cases, case_pages, cursor, resolved = [], 0, None, None
            while True:
                arguments = {} if cursor is None else {"cursor": cursor}
                page = (await bounded_call(session, sizes, "list_conflicts", arguments)).structured_content
                case_pages += 1
                check(page["open_cases"] >= len(open_ids) - 1, f"open_cases {page['open_cases']}")
                cases.extend(case["conflict_id"] for case in page["conflicts"])
                for case in page["conflicts"]:
                    check(case["candidates"] and case["memory_key"], f"compact case: {case}")
                cursor = page.get("next_cursor")
                if cursor is None:
                    break
                if resolved is None:
                    resolved = page["conflicts"][0]["conflict_id"]
                    cli(binary, project, "resolve", resolved, "1", "--revision", "1", "--rationale",
                        "decided while the model paged", "--actor", "Ada <ada@example.com>", "-q")
                check(case_pages < 100, "list_conflicts never ends")
            check(len(cases) == len(set(cases)), "a case was listed twice")
            check(sorted(cases) == open_ids, f"{len(cases)} cases listed, {len(open_ids)} open at the start")
            check(case_pages > 1, "every case fits in one page: the test shows nothing")
            detail = await bounded_call(session, sizes, "list_conflicts", {"conflict_id": open_ids[-1]})
            check(detail.structured_content["conflict"]["conflict_id"] == open_ids[-1], "detail of another case")

            keyed = await bounded_call(session, sizes, "write_memory", {
                "content": "Use Python 3.12", "kind": "decision", "importance": 4,
                "memory_key": "runtime.python-version"})
            check("Pending Keyed Facts" in keyed.structured_content["note"], f"note: {keyed.structured_content}")
    report = {
        "max_chars": {name: max(values) for name, values in sizes.items()},
        "calls": {name: len(values) for name, values in sizes.items()},
        "fact_pages": pages,
        "facts_listed": len(listed),
        "case_pages": case_pages,
        "cases_listed": len(cases),
    }
    with open(report_out, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1, sort_keys=True)
    print("large: ok")


async def one_writer(binary, project, server_index, facts):
    ids = []
    async with stdio_client(server(binary, project)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for n in range(facts):
                result = await call_ok(session, "write_memory", {
                    "content": f"server {server_index} fact {n}",
                    "kind": "outcome",
                    "importance": 1 + n % 5,
                    "evidence": {"server": str(server_index), "n": str(n)},
                })
                ids.append(result.structured_content["fact_id"])
    return ids


async def concurrent(binary, project, servers, facts, ids_out):
    results = await asyncio.gather(*(one_writer(binary, project, i, facts) for i in range(servers)))
    ids = [fact_id for per_server in results for fact_id in per_server]
    check(len(ids) == servers * facts and len(set(ids)) == len(ids), "fact ids missing or repeated")
    with open(ids_out, "w", encoding="utf-8") as out:
        json.dump(ids, out)
    print(f"concurrent: {servers} servers wrote {len(ids)} facts")


async def unavailable(binary, directory, expected):
    """A server started where it cannot serve completes the handshake and
    answers every call and read with the error, which names `expected`."""
    async with stdio_client(server(binary, directory)) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "workmem", f"server name {init.server_info.name}")
            check(expected in (init.instructions or ""), f"instructions: {init.instructions!r}")
            tools = {tool.name for tool in (await session.list_tools()).tools}
            check(tools == EXPECTED_TOOLS, f"tools: {sorted(tools)}")
            for name, arguments in [
                ("get_context", {}),
                ("write_memory", {"content": "x", "kind": "outcome", "importance": 1}),
                ("list_recent_facts", {}),
                ("list_conflicts", {}),
            ]:
                result = await session.call_tool(name, arguments)
                message = text_of(result)
                check(result.is_error, f"{name} did not fail: {message!r}")
                check(expected in message and "hint:" in message, f"{name}: {message!r}")
            try:
                await session.read_resource(MEMORY_URI)
                check(False, "reading the memory resource did not fail")
            except Exception as err:  # the SDK raises McpError
                check(expected in str(err), f"resource error: {err}")
    print("unavailable: ok")


async def paging(binary, project):
    """A 35-way tie's detail pages through every candidate; a new limit
    given with a cursor bounds the listing; a hand-made cursor is refused."""
    async with stdio_client(server(binary, project)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = (await call_ok(session, "list_conflicts", {})).structured_content
            check(listed["open_cases"] == 1, f"list: {listed}")
            case = listed["conflicts"][0]
            check(len(case["candidates"]) == 10 and case["more_candidates"] == 25, f"compact: {case}")
            conflict_id = case["conflict_id"]
            numbers, pages, cursor = [], 0, None
            while True:
                arguments = {"conflict_id": conflict_id}
                if cursor is not None:
                    arguments["cursor"] = cursor
                result = await call_ok(session, "list_conflicts", arguments)
                check(len(text_of(result)) <= MAX_RESULT_CHARS, f"page {pages}: {len(text_of(result))}")
                page = result.structured_content
                pages += 1
                numbers += [c["number"] for c in page["conflict"]["candidates"]]
                cursor = page.get("next_cursor")
                if cursor is None:
                    check("more_candidates" not in page["conflict"], f"last page: {page['conflict'].keys()}")
                    break
                check(page["conflict"]["more_candidates"] == 35 - len(numbers), f"page {pages}")
            check(pages > 1, f"the 35 candidates fit one page: {pages}")
            check(numbers == list(range(1, 36)), f"candidates listed: {numbers}")

            first = (await call_ok(session, "list_recent_facts", {"limit": 35})).structured_content
            shown = len(first["facts"])
            check(shown < 35 and "next_cursor" in first, f"first page holds {shown}")
            second = (await call_ok(session, "list_recent_facts",
                                    {"limit": shown + 2, "cursor": first["next_cursor"]})).structured_content
            check(len(second["facts"]) == 2 and "next_cursor" not in second, f"new limit: {len(second['facts'])}")
            # The same window to the end, the limit repeated: all 35.
            total, cursor = shown, first["next_cursor"]
            while cursor is not None:
                page = (await call_ok(session, "list_recent_facts", {"limit": 35, "cursor": cursor})).structured_content
                total += len(page["facts"])
                cursor = page.get("next_cursor")
            check(total == 35, f"listed {total} of 35")
            # A cursor made by hand from a real one is refused.
            text = first["next_cursor"]
            body = bytes.fromhex(text[len("wm1."):].split(".")[0]).decode()
            forged = json.loads(body)
            forged["listed"], forged["limit"], forged["from"]["at"] = 0, 1000, "2000-01-01T00:00:00Z"
            made = "wm1." + json.dumps(forged, separators=(",", ":")).encode().hex() + "." + text.split(".")[-1]
            await call_error(session, "list_recent_facts", {"limit": 1000, "cursor": made}, "cursor")
    print("paging: ok")


async def damage(binary, project):
    """Damaged state comes back with the CLI's hint; a memory directory
    removed while the server runs is reported, never recreated empty."""
    memory = os.path.join(project, ".workmem", "memory")
    async with stdio_client(server(binary, project)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await call_ok(session, "write_memory", {"content": "Before the damage", "kind": "outcome", "importance": 2})
            curated = os.path.join(memory, "curated.json")
            with open(curated, "w", encoding="utf-8") as out:
                out.write("{not json\n")
            result = await session.call_tool("get_context", {})
            message = text_of(result)
            check(result.is_error and "curated.json" in message, f"damaged: {message!r}")
            check("hint: nothing was changed" in message and "workmem rebuild" in message, f"no hint: {message!r}")
            os.remove(curated)
            await call_ok(session, "get_context", {})

            shutil.rmtree(os.path.join(project, ".workmem"))
            for name, arguments in [
                ("write_memory", {"content": "After the removal", "kind": "outcome", "importance": 2}),
                ("get_context", {}),
                ("list_recent_facts", {}),
            ]:
                result = await session.call_tool(name, arguments)
                message = text_of(result)
                check(result.is_error and "was removed while the server ran" in message, f"{name}: {message!r}")
                check("hint:" in message, f"{name}: {message!r}")
            check(not os.path.exists(os.path.join(project, ".workmem")), "the memory directory was recreated")
    print("damage: ok")


def main(argv):
    if len(argv) == 4 and argv[0] == "unavailable":
        asyncio.run(unavailable(argv[1], argv[2], argv[3]))
    elif len(argv) == 3 and argv[0] == "paging":
        asyncio.run(paging(argv[1], argv[2]))
    elif len(argv) == 3 and argv[0] == "damage":
        asyncio.run(damage(argv[1], argv[2]))
    elif len(argv) >= 3 and argv[0] == "scenario":
        asyncio.run(scenario(argv[1], argv[2]))
    elif len(argv) == 4 and argv[0] == "large":
        asyncio.run(large(argv[1], argv[2], argv[3]))
    elif len(argv) == 6 and argv[0] == "concurrent":
        asyncio.run(concurrent(argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
