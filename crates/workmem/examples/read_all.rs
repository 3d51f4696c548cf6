//! Reads every fact of a workspace and prints the count and the time taken
//! (profiling aid): `cargo run --release -p workmem --example read_all -- DIR`.
fn main() {
    let dir = std::env::args().nth(1).expect("usage: read_all DIR");
    let ws = workmem::Workspace::open(std::path::Path::new(&dir), None).expect("open");
    let started = std::time::Instant::now();
    let facts = ws.facts().expect("facts");
    println!("{} facts in {:.1?}", facts.len(), started.elapsed());
}
