//! Temporary runner while the main runner is being written.
mod test_adjudication;
