//! The reading of a JSON object that arrives from outside (a model's tool
//! arguments): the check that it holds only the fields the reader knows.

use serde_json::{Map, Value};

use crate::error::{Error, Invalid};

/// Checks that `args` holds no field outside `known`.
///
/// Errors: [`Error::InvalidInput`] naming the first unknown field.
pub fn reject_unknown_fields(args: &Map<String, Value>, known: &[&str]) -> Result<(), Error> {
    match args.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => {
            // The message names the field; a field named like a
            // credential is not repeated.
            let field = if crate::model::secret::find(key).is_some() {
                "(an unknown field, not shown: it looks like a credential)"
            } else {
                key.as_str()
            };
            Err(Error::invalid(
                field,
                Invalid::UnknownField { expected: known.iter().map(|k| (*k).to_owned()).collect() },
            ))
        }
    }
}
