//! The fingerprint a cache keeps of the bytes it read of a daily file: a
//! [`BlockChain`] hash of them, and [`Covered`], what a cache has read of
//! one file (its stamp, how many bytes, their fingerprint), in the line
//! every cache writes of it. How a cache compares it with the files as they
//! are is [`crate::store::coverage`].

use std::fmt::Write as _;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::store::atomic_io::{self, FileStamp};
use crate::store::names::is_day_name;

/// The block of a [`BlockChain`].
pub(crate) const CHAIN_BLOCK: usize = 4096;

/// A running hash of a daily file's bytes that goes on from a small saved
/// state: XXH3-64 of each [`CHAIN_BLOCK`] bytes, seeded with the value of
/// the blocks before it. Its state is that value and the bytes after the
/// last whole block, which a cache does not keep: it reads them back from
/// the file (fewer than a block) when the hash goes on, and checks them
/// against their checksum ([`Prefix::tail_sum`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockChain {
    /// The value after the whole blocks hashed so far.
    value: u64,
    /// The bytes after them.
    tail: Vec<u8>,
}

impl Default for BlockChain {
    fn default() -> BlockChain {
        BlockChain { value: 0x5741_4c4b_4d45_4d31, tail: Vec::new() }
    }
}

impl BlockChain {
    /// Hashes `bytes`, the next ones.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if !self.tail.is_empty() {
            let take = bytes.len().min(CHAIN_BLOCK - self.tail.len());
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.tail.len() < CHAIN_BLOCK {
                return;
            }
            self.value = xxh3_64_with_seed(&self.tail, self.value);
            self.tail.clear();
        }
        let (blocks, rest) = bytes.as_chunks::<CHAIN_BLOCK>();
        for block in blocks {
            self.value = xxh3_64_with_seed(block, self.value);
        }
        self.tail.extend_from_slice(rest);
    }

    /// Returns the fingerprint of the `len` bytes hashed so far: what a
    /// cache keeps.
    pub(crate) fn prefix(&self, len: u64) -> Prefix {
        Prefix { len, chain: self.value, tail_sum: checksum(&self.tail) }
    }

    /// Returns the hash of `prefix` going on, given the bytes after its
    /// whole blocks; `None` when they are not those bytes.
    pub(crate) fn resume(prefix: &Prefix, tail: &[u8]) -> Option<BlockChain> {
        (tail.len() == prefix.len as usize % CHAIN_BLOCK && checksum(tail) == prefix.tail_sum)
            .then(|| BlockChain { value: prefix.chain, tail: tail.to_vec() })
    }
}

impl BlockChain {
    /// Returns the hash of `prefix`, the first bytes of the file at `path`,
    /// going on: the bytes after its whole blocks are read back from the
    /// file; `None` when they cannot be read or are not those bytes.
    pub(crate) fn resume_from(path: &Path, prefix: &Prefix) -> Option<BlockChain> {
        use std::os::unix::fs::FileExt as _;
        let file = atomic_io::open_optional(path).ok()??;
        let after = prefix.len % CHAIN_BLOCK as u64;
        let mut tail = vec![0; after as usize];
        file.read_exact_at(&mut tail, prefix.len - after).ok()?;
        BlockChain::resume(prefix, &tail)
    }
}

/// A checksum of a few bytes that catches a torn or zeroed write, not an
/// adversary.
pub(crate) fn checksum(data: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = 0x243f_6a88_85a3_08d3 ^ data.len() as u64;
    let (words, rest) = data.as_chunks::<8>();
    for word in words {
        hash = (hash ^ u64::from_le_bytes(*word)).wrapping_mul(K).rotate_left(31);
    }
    for byte in rest {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(K).rotate_left(31);
    }
    hash
}

/// The first bytes of a daily file a cache read, as it keeps them: how
/// many, and their [`BlockChain`] fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefix {
    /// How many bytes.
    pub len: u64,
    /// The chain's value after their whole blocks.
    pub chain: u64,
    /// The checksum of the bytes after those blocks.
    pub tail_sum: u64,
}

/// What a cache has read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// The bytes from the start whose records the cache holds.
    pub prefix: Prefix,
}

impl Covered {
    /// Returns the coverage of the first `len` bytes of `data`, read with
    /// `stamp`.
    pub(crate) fn of(stamp: FileStamp, data: &[u8], len: usize) -> Covered {
        let mut chain = BlockChain::default();
        chain.update(&data[..len]);
        Covered { stamp, prefix: chain.prefix(len as u64) }
    }

    /// Appends the `file` line of `day` to `out`.
    pub(crate) fn write_line(&self, day: &str, out: &mut String) {
        let [inode, size, seconds, nanos] = self.stamp;
        let Prefix { len, chain, tail_sum } = self.prefix;
        let _ = writeln!(
            out,
            "file {day} {inode} {size} {seconds} {nanos} {len} {chain:016x} {tail_sum:016x}"
        );
    }

    /// Parses the rest of a `file` line (after `file `): the day and the
    /// coverage; `None` when malformed.
    pub(crate) fn parse_line(rest: &str) -> Option<(&str, Covered)> {
        let mut fields = rest.split_ascii_whitespace();
        let day = fields.next()?;
        let mut stamp: FileStamp = [0; 4];
        for slot in &mut stamp {
            *slot = fields.next()?.parse().ok()?;
        }
        let len = fields.next()?.parse().ok()?;
        let mut hex = || {
            let field = fields.next().filter(|field| field.len() == 16)?;
            u64::from_str_radix(field, 16).ok()
        };
        let (chain, tail_sum) = (hex()?, hex()?);
        (fields.next().is_none() && is_day_name(day))
            .then_some((day, Covered { stamp, prefix: Prefix { len, chain, tail_sum } }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|n| (n * 31 % 251) as u8).collect()
    }

    fn hashed(parts: &[&[u8]]) -> BlockChain {
        let mut hash = BlockChain::default();
        for part in parts {
            hash.update(part);
        }
        hash
    }

    #[test]
    fn the_chain_does_not_depend_on_how_the_bytes_are_cut() {
        let data = bytes(3 * CHAIN_BLOCK + 1234);
        let whole = hashed(&[&data]);
        for cut in [0, 1, 63, CHAIN_BLOCK - 1, CHAIN_BLOCK, CHAIN_BLOCK + 1, 2 * CHAIN_BLOCK + 5] {
            let (a, b) = data.split_at(cut);
            assert_eq!(hashed(&[a, b]), whole, "cut at {cut}");
        }
        let small: Vec<&[u8]> = data.chunks(97).collect();
        assert_eq!(hashed(&small), whole);
        assert_eq!(whole.tail, data[3 * CHAIN_BLOCK..]);
    }

    #[test]
    fn a_resumed_chain_goes_on_as_the_unbroken_one() {
        let data = bytes(2 * CHAIN_BLOCK + 700);
        for len in [0, 5, CHAIN_BLOCK - 1, CHAIN_BLOCK, CHAIN_BLOCK + 300, data.len() - 1] {
            let before = hashed(&[&data[..len]]);
            let prefix = before.prefix(len as u64);
            // The bytes after the whole blocks, as read back from the file.
            let tail = &data[len - len % CHAIN_BLOCK..len];
            let mut resumed = BlockChain::resume(&prefix, tail).unwrap();
            resumed.update(&data[len..]);
            assert_eq!(resumed, hashed(&[&data]), "resumed at {len}");
        }
        // Not the bytes the prefix ended with, or not as many.
        let prefix = hashed(&[&data[..CHAIN_BLOCK + 300]]).prefix(CHAIN_BLOCK as u64 + 300);
        let mut tail = data[CHAIN_BLOCK..CHAIN_BLOCK + 300].to_vec();
        assert!(BlockChain::resume(&prefix, &tail).is_some());
        tail[7] ^= 1;
        assert!(BlockChain::resume(&prefix, &tail).is_none());
        assert!(BlockChain::resume(&prefix, &data[CHAIN_BLOCK..CHAIN_BLOCK + 299]).is_none());
    }

    #[test]
    fn a_changed_byte_or_order_changes_the_fingerprint() {
        let data = bytes(2 * CHAIN_BLOCK + 10);
        let whole = hashed(&[&data]).prefix(data.len() as u64);
        for at in [0, CHAIN_BLOCK - 1, CHAIN_BLOCK, 2 * CHAIN_BLOCK + 9] {
            let mut changed = data.clone();
            changed[at] ^= 1;
            assert_ne!(hashed(&[&changed]).prefix(data.len() as u64), whole, "byte {at}");
        }
        // The same blocks in another order.
        let mut swapped = data[CHAIN_BLOCK..2 * CHAIN_BLOCK].to_vec();
        swapped.extend_from_slice(&data[..CHAIN_BLOCK]);
        swapped.extend_from_slice(&data[2 * CHAIN_BLOCK..]);
        assert_ne!(hashed(&[&swapped]).prefix(data.len() as u64), whole);
    }
}
