"""Drives `workmem mcp` with the official Python MCP client (PyPI `mcp`).

Run by crates/workmem-cli/tests/mcp.rs with the interpreter named by
WORKMEM_TEST_PYTHON. Each scenario asserts as it goes and exits non-zero on
the first failure; the Rust test then checks the files on disk.

    python mcp_client.py scenario   WORKMEM_BIN PROJECT
    python mcp_client.py concurrent WORKMEM_BIN PROJECT SERVERS FACTS IDS_OUT
"""

import asyncio
import json
import subprocess
import sys

from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = {"write_memory", "get_context", "list_recent_facts", "list_conflicts"}
MEMORY_URI = "workmem://memory"
CONTEXT_URI = "workmem://context"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def server(binary, project):
    return StdioServerParameters(command=binary, args=["-C", project, "mcp"], cwd=project)


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
            check(names == EXPECTED_TOOLS and len(tools) == 4, f"tools: {sorted(names)}")
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
            check("Use Postgres" not in context and "Use SQLite" not in context, "a conflict candidate leaked")
            bare = text_of(await call_ok(session, "get_context", {"recent": 0}))
            check("Ran the migration" not in bare, f"recent 0 still lists facts: {bare!r}")

            conflicts = (await call_ok(session, "list_conflicts", {})).structured_content["conflicts"]
            check(len(conflicts) == 1 and conflicts[0]["memory_key"] == "db.engine", f"conflicts: {conflicts}")
            check(conflicts[0]["status"] == "open", "case not open")
            contents = sorted(c["content"] for c in conflicts[0]["candidates"])
            check(contents == ["Use Postgres", "Use SQLite"], f"candidates: {contents}")

            memory = await read_text(session, MEMORY_URI)
            check(memory == cli(binary, project, "memory"), "memory resource differs from `workmem memory`")
            check(memory.startswith("# Workspace Memory\n"), f"memory: {memory!r}")
            check("- Use WAL mode for the SQLite cache" in memory, f"memory: {memory!r}")
            resource_context = await read_text(session, CONTEXT_URI)
            check(resource_context == context, "context resource differs from get_context")
            check(resource_context.rstrip("\n") == cli(binary, project, "context").rstrip("\n"),
                  "context resource differs from `workmem context`")

    print("scenario: ok")


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


def main(argv):
    if len(argv) >= 3 and argv[0] == "scenario":
        asyncio.run(scenario(argv[1], argv[2]))
    elif len(argv) == 6 and argv[0] == "concurrent":
        asyncio.run(concurrent(argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
