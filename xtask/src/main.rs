//! `cargo xtask`: project tasks that take more than one command.
//!
//! `cargo xtask test [CARGO TEST ARGS]` is the README's test command. On a
//! fresh clone it
//!
//! 1. creates (or reuses) a Python virtual environment at `target/mcp-venv`
//!    holding the pinned Python MCP SDK (`mcp==2.3.0`), which the MCP client
//!    tests in `crates/workmem-cli/tests/mcp.rs` drive `workmem mcp` with;
//! 2. installs (or reuses) the pinned agent clients from npm (Claude Code,
//!    Codex CLI, Gemini CLI, and Node 22 for Gemini CLI) into
//!    `target/agent-clients`, which the setup tests in
//!    `crates/workmem-cli/tests/setup.rs` run (`cargo xtask clients` does
//!    only this step);
//! 3. runs `cargo test --workspace --locked --features workmem-cli/failpoints
//!    --no-fail-fast` with `WORKMEM_TEST_PYTHON` naming that venv's
//!    interpreter and `WORKMEM_TEST_AGENT_CLIENTS` the clients' `bin`
//!    directory, streaming cargo's output as it comes;
//! 4. prints one closing line, `tests: N passed, N failed`, the totals of
//!    every `test result:` line of every test binary, and exits non-zero when
//!    cargo failed or any test failed.
//!
//! Arguments after `test` go to `cargo test`: `cargo xtask test -- --nocapture`,
//! or `cargo xtask test -p workmem` to run one package (then `--workspace` is
//! left out, and the failpoints feature is passed only when `workmem-cli` is
//! one of the packages).
//!
//! The alias lives in `.cargo/config.toml`. This crate uses the standard
//! library only, so it builds in seconds.

use std::env;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The Python MCP SDK version the client tests are written against.
const MCP_VERSION: &str = "2.3.0";

/// The venv, relative to the workspace root.
const VENV: &str = "target/mcp-venv";

/// Where the agent clients are installed, relative to the workspace root.
const AGENT_CLIENTS: &str = "target/agent-clients";

/// The npm packages of the agent clients the setup tests run, pinned, and
/// the program each puts in `node_modules/.bin`. Node 22 is there for
/// Gemini CLI, which needs a newer Node than some distributions ship.
const CLIENT_PACKAGES: [(&str, &str, &str); 4] = [
    ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    ("@openai/codex", "0.171.0", "codex"),
    ("@google/gemini-cli", "0.61.0", "gemini"),
    ("node", "22.23.3", "node"),
];

const USAGE: &str = "\
usage: cargo xtask test [CARGO TEST ARGS]

  test     install the Python MCP client into target/mcp-venv and the agent
           clients into target/agent-clients (once each), run every test of the
           workspace (failpoints on), print `tests: N passed, N failed`
  clients  install the agent clients (Claude Code, Codex CLI, Gemini CLI) from
           npm into target/agent-clients (once) and print their bin directory

Arguments after `test` are passed to `cargo test`, e.g.
  cargo xtask test -- --nocapture
  cargo xtask test -p workmem";

fn main() -> ExitCode {
    let mut args = env::args_os().skip(1);
    let task = args.next();
    let result = match task.as_deref().and_then(OsStr::to_str) {
        Some("test") => test(args.collect()),
        Some("clients") => agent_clients(&workspace_root()).map(|bin| {
            println!("{}", bin.display());
            true
        }),
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}");
            Ok(true)
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's directory.
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `cargo xtask test`: returns whether every test passed.
fn test(extra: Vec<OsString>) -> Result<bool, String> {
    let root = workspace_root();
    let python = mcp_python(&root)?;
    let clients = agent_clients(&root)?;

    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command.current_dir(&root).arg("test");
    command.args(test_selection(&extra));
    command.args(["--locked", "--no-fail-fast"]).args(&extra);
    command.env("WORKMEM_TEST_PYTHON", &python).stdout(Stdio::piped());
    command.env("WORKMEM_TEST_AGENT_CLIENTS", &clients);
    eprintln!(
        "xtask: cargo test (WORKMEM_TEST_PYTHON={}, WORKMEM_TEST_AGENT_CLIENTS={})",
        python.display(),
        clients.display()
    );

    let mut child = command.spawn().map_err(|err| format!("cannot run cargo: {err}"))?;
    let mut totals = Totals::default();
    if let Some(mut stdout) = child.stdout.take() {
        totals = stream(&mut stdout, &mut io::stdout())
            .map_err(|err| format!("reading cargo test output: {err}"))?;
    }
    let status = child.wait().map_err(|err| format!("waiting for cargo test: {err}"))?;

    let mut closing = format!("tests: {} passed, {} failed", totals.passed, totals.failed);
    if totals.ignored > 0 {
        let _ = write!(closing, ", {} ignored", totals.ignored);
    }
    println!("{closing}");
    if !status.success() && totals.failed == 0 {
        eprintln!("xtask: cargo test exited with {status}");
    }
    Ok(status.success() && totals.failed == 0)
}

/// Returns the package selection and features for `cargo test`: the whole
/// workspace with the failpoints feature, unless `extra` names packages.
fn test_selection(extra: &[OsString]) -> Vec<String> {
    let mut packages = Vec::new();
    let mut words = extra.iter().map(|word| word.to_string_lossy()).take_while(|word| word != "--");
    while let Some(word) = words.next() {
        if word == "-p" || word == "--package" {
            packages.push(words.next().map(std::borrow::Cow::into_owned).unwrap_or_default());
        } else if let Some(name) =
            word.strip_prefix("--package=").or_else(|| word.strip_prefix("-p"))
        {
            packages.push(name.to_owned());
        }
    }
    let features = vec!["--features".to_owned(), "workmem-cli/failpoints".to_owned()];
    if packages.is_empty() {
        let mut selection = vec!["--workspace".to_owned()];
        selection.extend(features);
        selection
    } else if packages.iter().any(|name| name == "workmem-cli") {
        features
    } else {
        Vec::new()
    }
}

/// Counts from the `test result:` lines of the test binaries.
#[derive(Debug, Default, PartialEq)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Totals {
    /// Adds the counts of one line of output, if it is a `test result:` line
    /// (`test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; ...`).
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim_end().strip_prefix("test result:") else { return };
        let words: Vec<&str> = rest.split_whitespace().collect();
        for pair in words.windows(2) {
            let Ok(count) = pair[0].parse::<u64>() else { continue };
            let label = pair[1].trim_end_matches([';', ',', '.']);
            match label {
                "passed" => self.passed += count,
                "failed" => self.failed += count,
                "ignored" => self.ignored += count,
                _ => {}
            }
        }
    }
}

/// Copies `input` to `out` as it arrives and totals its `test result:` lines.
fn stream(input: &mut impl Read, out: &mut impl Write) -> io::Result<Totals> {
    let mut totals = Totals::default();
    let mut chunk = [0u8; 8192];
    let mut line = Vec::new();
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        out.write_all(&chunk[..n])?;
        out.flush()?;
        for &byte in &chunk[..n] {
            if byte == b'\n' {
                totals.add_line(&String::from_utf8_lossy(&line));
                line.clear();
            } else {
                line.push(byte);
            }
        }
    }
    totals.add_line(&String::from_utf8_lossy(&line));
    Ok(totals)
}

/// Returns the interpreter of `target/mcp-venv`, creating the venv and
/// installing the pinned `mcp` into it unless it already holds that version.
fn mcp_python(root: &Path) -> Result<PathBuf, String> {
    let venv = root.join(VENV);
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if has_pinned_mcp(&python) {
        return Ok(python);
    }

    eprintln!(
        "xtask: installing the Python MCP client (mcp=={MCP_VERSION}) into {VENV} for the MCP tests"
    );
    let hint = format!(
        "the MCP client tests (crates/workmem-cli/tests/mcp.rs) need Python 3.10 or newer with the `venv` module \
         (Debian and Ubuntu: `apt install python3-venv`) and access to PyPI once, to install mcp=={MCP_VERSION} \
         into {VENV}"
    );
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|err| format!("cannot remove the old {}: {err}", venv.display()))?;
    }
    let system_python = ["python3", "python"]
        .into_iter()
        .find(|name| succeeds(Command::new(name).arg("--version")))
        .ok_or_else(|| format!("no `python3` on PATH: {hint}"))?;
    if !succeeds(Command::new(system_python).args(["-m", "venv"]).arg(&venv)) {
        return Err(format!("`{system_python} -m venv {VENV}` failed: {hint}"));
    }
    let pin = format!("mcp=={MCP_VERSION}");
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", &pin])
        .stdout(Stdio::inherit())
        .status();
    if !matches!(pip, Ok(status) if status.success()) {
        return Err(format!("`pip install {pin}` into {VENV} failed: {hint}"));
    }
    if !has_pinned_mcp(&python) {
        return Err(format!("{VENV} still lacks {pin} after pip install: {hint}"));
    }
    Ok(python)
}

/// Returns the `bin` directory of `target/agent-clients`, installing the
/// pinned clients there with npm unless every one is already installed at
/// its version.
fn agent_clients(root: &Path) -> Result<PathBuf, String> {
    let prefix = root.join(AGENT_CLIENTS);
    let bin = prefix.join("node_modules").join(".bin");
    if clients_installed(&prefix) {
        return Ok(bin);
    }
    let hint = format!(
        "the setup tests (crates/workmem-cli/tests/setup.rs) run the real Claude Code, Codex CLI and Gemini CLI: \
         they need `npm` (Debian and Ubuntu: `apt install npm`) and access to the npm registry once, to install \
         them into {AGENT_CLIENTS} (about 250 MB to download)"
    );
    if !succeeds(Command::new("npm").arg("--version")) {
        return Err(format!("no `npm` on PATH: {hint}"));
    }
    let pins: Vec<String> =
        CLIENT_PACKAGES.iter().map(|(name, version, _)| format!("{name}@{version}")).collect();
    eprintln!("xtask: installing {} into {AGENT_CLIENTS} for the setup tests", pins.join(" "));
    let npm = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(&prefix)
        .args(["--no-save", "--no-audit", "--no-fund", "--loglevel=error"])
        .args(&pins)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .status();
    if !matches!(npm, Ok(status) if status.success()) {
        return Err(format!("`npm install {}` failed: {hint}", pins.join(" ")));
    }
    if !clients_installed(&prefix) {
        return Err(format!(
            "{AGENT_CLIENTS} still lacks a pinned client after npm install: {hint}"
        ));
    }
    Ok(bin)
}

/// Whether every pinned client is installed under `prefix` at its version,
/// with its program in `node_modules/.bin`.
fn clients_installed(prefix: &Path) -> bool {
    let modules = prefix.join("node_modules");
    CLIENT_PACKAGES.iter().all(|(name, version, program)| {
        let manifest = std::fs::read_to_string(modules.join(name).join("package.json"));
        let pinned = format!("\"version\": \"{version}\"");
        manifest.is_ok_and(|text| text.contains(&pinned))
            && modules.join(".bin").join(program).exists()
    })
}

/// Whether `python` runs and has exactly the pinned `mcp` installed.
fn has_pinned_mcp(python: &Path) -> bool {
    let check = format!(
        "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '{MCP_VERSION}')"
    );
    python.exists() && succeeds(Command::new(python).args(["-c", &check]).stderr(Stdio::null()))
}

/// Runs `command` with no stdin and stdout, and returns whether it exited 0.
fn succeeds(command: &mut Command) -> bool {
    command.stdin(Stdio::null()).stdout(Stdio::null()).status().is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_every_test_result_line() {
        let output = "\
running 2 tests
test a ... ok
test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.50s
test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
test this_test_result: is not a result line ... ok
";
        let mut copy = Vec::new();
        let totals = stream(&mut output.as_bytes(), &mut copy).unwrap();
        assert_eq!(totals, Totals { passed: 15, failed: 2, ignored: 1 });
        assert_eq!(copy, output.as_bytes());
    }

    #[test]
    fn packages_named_in_the_arguments_replace_the_workspace() {
        let args = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let whole = ["--workspace", "--features", "workmem-cli/failpoints"];
        assert_eq!(test_selection(&args(&[])), whole);
        assert_eq!(test_selection(&args(&["--", "-p", "x"])), whole);
        assert!(test_selection(&args(&["-p", "workmem"])).is_empty());
        assert!(test_selection(&args(&["--package=workmem"])).is_empty());
        assert_eq!(
            test_selection(&args(&["-pworkmem-cli"])),
            ["--features", "workmem-cli/failpoints"]
        );
        assert_eq!(
            test_selection(&args(&["--package", "workmem-cli"])),
            ["--features", "workmem-cli/failpoints"]
        );
    }
}
