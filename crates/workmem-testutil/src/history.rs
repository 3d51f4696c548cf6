//! What the facts of the random histories say: the property tests of
//! distillation and of corrections (one clone and two) draw facts as a
//! key number and a value number, and these give the memory key and the
//! wording, so that every history speaks the same small language of ties,
//! cosmetic variants and distinct statements.

/// The memory key numbered `key`.
pub fn history_key(key: usize) -> String {
    format!("k.key-{key}")
}

/// The number of a memory key [`history_key`] made, or `None` for any
/// other key.
pub fn history_key_number(memory_key: &str) -> Option<usize> {
    memory_key.strip_prefix("k.key-")?.parse().ok()
}

/// The memory key and the wording of a fact: of key `key`, the value
/// `value` ("Key K uses value V."); unkeyed (`None`), statement `value`
/// of three, the first two being two wordings (cosmetic variants) of one
/// statement.
///
/// Panics when an unkeyed `value` is 3 or more.
pub fn history_fact(key: Option<usize>, value: usize) -> (Option<String>, String) {
    match key {
        Some(key) => (Some(history_key(key)), format!("Key {key} uses value {value}.")),
        None => (
            None,
            ["Run the migrations first.", "RUN THE MIGRATIONS FIRST.", "Pin every action."][value]
                .to_owned(),
        ),
    }
}
