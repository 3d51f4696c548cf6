//! Facts as a daily log stores them, for lines a test writes by hand: a
//! fact from before the secret guard knew a form, or one of another
//! workspace, which no command would write.

use serde_json::json;

/// Returns the daily-log line (without its newline) of a fact: no
/// evidence, source `agent`, schema 2; `memory_key` is `null` when `None`.
pub fn stored_fact_line(
    workspace_id: &str,
    fact_id: &str,
    kind: &str,
    importance: u8,
    memory_key: Option<&str>,
    content: &str,
    recorded_at: &str,
) -> String {
    json!({
        "content": content, "evidence": {}, "fact_id": fact_id, "importance": importance,
        "kind": kind, "memory_key": memory_key, "recorded_at": recorded_at,
        "schema_version": 2, "source": "agent", "workspace_id": workspace_id,
    })
    .to_string()
}

/// Returns the daily-log lines, each with its newline, of a tie of
/// `memory_key` on `day` (`YYYY-MM-DD`): decisions of importance 4, `k1`
/// and `k2` stating "Use 8 runners.", `k3` and `k4` "Use 16 runners.",
/// each value recorded at 09:00 and 10:00.
pub fn tied_fact_lines(workspace_id: &str, memory_key: &str, day: &str) -> String {
    let mut lines = String::new();
    for (id, content, hour) in [
        ("k1", "Use 8 runners.", "09"),
        ("k2", "Use 8 runners.", "10"),
        ("k3", "Use 16 runners.", "09"),
        ("k4", "Use 16 runners.", "10"),
    ] {
        let at = format!("{day}T{hour}:00:00Z");
        lines.push_str(&stored_fact_line(
            workspace_id,
            id,
            "decision",
            4,
            Some(memory_key),
            content,
            &at,
        ));
        lines.push('\n');
    }
    lines
}
