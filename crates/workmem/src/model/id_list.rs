//! A list of ids held in one buffer: the evidence of a curated entry or a
//! candidate, the facts a conflict case observed. A long-lived entry cites
//! thousands of facts; kept as one string of ids and their end offsets,
//! its list is read, copied, merged and dropped in two allocations instead
//! of one per id. It reads and writes as a JSON array of strings.

use std::fmt;
use std::iter::FusedIterator;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A list of ids, in the order given (the state's lists are sorted and
/// unique: [`IdList::is_sorted_unique`] checks it).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct IdList {
    /// The ids, one after another.
    text: String,
    /// Where each id ends in `text`.
    ends: Vec<usize>,
}

impl IdList {
    /// Returns an empty list.
    pub fn new() -> IdList {
        IdList::default()
    }

    /// Returns an empty list with room for `ids` ids of `bytes` bytes in all.
    pub fn with_capacity(ids: usize, bytes: usize) -> IdList {
        IdList { text: String::with_capacity(bytes), ends: Vec::with_capacity(ids) }
    }

    /// Returns the sorted union of two sorted, unique lists of ids.
    pub fn union<'a>(
        a: impl IntoIterator<Item = &'a str>,
        b: impl IntoIterator<Item = &'a str>,
    ) -> IdList {
        let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
        let mut out = IdList::with_capacity(a.size_hint().0 + b.size_hint().0, 0);
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x == y => {
                    b.next();
                    a.next()
                }
                (Some(x), Some(y)) if y < x => b.next(),
                (Some(_), _) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(id) => out.push(id),
                None => return out,
            }
        }
    }

    /// Moves the ids `selected` picks from this sorted, unique list into
    /// `to`, another one, keeping both sorted and unique (a correction
    /// moving facts between an entry's or candidate's lists); returns
    /// whether it moved any.
    pub(crate) fn move_to(&mut self, to: &mut IdList, selected: impl Fn(&str) -> bool) -> bool {
        let (moving, staying): (Vec<&str>, Vec<&str>) = self.iter().partition(|id| selected(id));
        if moving.is_empty() {
            return false;
        }
        let joined = IdList::union(to.iter(), moving);
        let kept: IdList = staying.into_iter().collect();
        *to = joined;
        *self = kept;
        true
    }

    /// Returns the number of ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Returns whether the list holds no id.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Returns the bytes of all ids together.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Returns the id at `index`.
    pub fn get(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)?;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        Some(&self.text[start..end])
    }

    /// Returns the first id.
    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    /// Returns the last id.
    pub fn last(&self) -> Option<&str> {
        self.len().checked_sub(1).and_then(|index| self.get(index))
    }

    /// Returns the ids in order.
    pub fn iter(&self) -> Ids<'_> {
        Ids { list: self, front: 0, back: self.len() }
    }

    /// Appends `id`.
    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    /// Keeps the first `len` ids.
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.ends.truncate(len);
            self.text.truncate(self.ends.last().copied().unwrap_or(0));
        }
    }

    /// Searches a sorted list for `id`: its index, or where it would go.
    pub fn binary_search(&self, id: &str) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.get(middle).unwrap_or_default().cmp(id) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Ok(middle),
            }
        }
        Err(low)
    }

    /// Returns whether `id` is in the list (any order).
    pub fn contains(&self, id: &str) -> bool {
        self.iter().any(|held| held == id)
    }

    /// Returns whether every id is smaller than the next.
    pub fn is_sorted_unique(&self) -> bool {
        let mut ids = self.iter();
        let Some(mut previous) = ids.next() else { return true };
        ids.all(|id| std::mem::replace(&mut previous, id) < id)
    }

    /// Returns the ids as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

/// The ids of an [`IdList`], in order.
#[derive(Debug, Clone)]
pub struct Ids<'a> {
    list: &'a IdList,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Ids<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.front == self.back {
            return None;
        }
        self.front += 1;
        self.list.get(self.front - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }
}

impl DoubleEndedIterator for Ids<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        self.list.get(self.back)
    }
}

impl ExactSizeIterator for Ids<'_> {}

impl FusedIterator for Ids<'_> {}

impl<'a> IntoIterator for &'a IdList {
    type Item = &'a str;
    type IntoIter = Ids<'a>;

    fn into_iter(self) -> Ids<'a> {
        self.iter()
    }
}

impl<S: AsRef<str>> FromIterator<S> for IdList {
    fn from_iter<I: IntoIterator<Item = S>>(ids: I) -> IdList {
        let mut list = IdList::new();
        list.extend(ids);
        list
    }
}

impl<S: AsRef<str>> Extend<S> for IdList {
    fn extend<I: IntoIterator<Item = S>>(&mut self, ids: I) {
        let ids = ids.into_iter();
        self.ends.reserve(ids.size_hint().0);
        for id in ids {
            self.push(id.as_ref());
        }
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for IdList {
    fn eq(&self, other: &[S]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_ref())
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for IdList {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == other[..]
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for IdList {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl fmt::Debug for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for IdList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for id in self {
            seq.serialize_element(id)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for IdList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<IdList, D::Error> {
        deserializer.deserialize_seq(ListVisitor)
    }
}

/// Reads a JSON array of strings into one list, each string appended to
/// the list's buffer as it is read (no string of its own).
struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = IdList;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of ids")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IdList, A::Error> {
        let mut list = IdList::with_capacity(seq.size_hint().unwrap_or(0), 0);
        while seq.next_element_seed(Append(&mut list))?.is_some() {}
        Ok(list)
    }
}

/// Appends one string of the array to the list.
struct Append<'l>(&'l mut IdList);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Append<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id (a string)")
    }

    fn visit_str<E: de::Error>(self, id: &str) -> Result<(), E> {
        self.0.push(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn move_to_takes_the_picked_ids_into_the_other_list_in_order() {
        let mut from: IdList = ["a", "c", "e"].into_iter().collect();
        let mut to: IdList = ["b", "d"].into_iter().collect();
        assert!(from.move_to(&mut to, |id| id != "c"));
        assert_eq!((from, to), (IdList::from_iter(["c"]), IdList::from_iter(["a", "b", "d", "e"])));
        let mut none: IdList = ["x"].into_iter().collect();
        let mut other = IdList::new();
        assert!(!none.move_to(&mut other, |_| false));
        assert_eq!((none, other), (IdList::from_iter(["x"]), IdList::new()));
    }

    #[test]
    fn reads_and_writes_a_json_array_of_strings() {
        let list: IdList = serde_json::from_str(r#"["a", "b\u0063", "f-1"]"#).unwrap();
        assert_eq!(list, ["a", "bc", "f-1"]);
        assert_eq!(serde_json::to_string(&list).unwrap(), r#"["a","bc","f-1"]"#);
        assert_eq!(serde_json::to_string(&IdList::new()).unwrap(), "[]");
        for bad in [r#"["a", 1]"#, r#""a""#, r#"{"a": 1}"#, r#"["a", null]"#] {
            assert!(serde_json::from_str::<IdList>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checks_order_and_searches() {
        let list: IdList = ["b", "d", "f"].into_iter().collect();
        assert!(list.is_sorted_unique());
        assert_eq!(list.binary_search("d"), Ok(1));
        assert_eq!(list.binary_search("a"), Err(0));
        assert_eq!(list.binary_search("e"), Err(2));
        assert_eq!(list.binary_search("g"), Err(3));
        assert!(list.contains("f") && !list.contains("c"));
        assert_eq!((list.first(), list.last()), (Some("b"), Some("f")));
        for unsorted in [&["b", "a"][..], &["a", "a"], &["a", "c", "b"]] {
            assert!(!unsorted.iter().collect::<IdList>().is_sorted_unique(), "{unsorted:?}");
        }
        assert!(IdList::new().is_sorted_unique());
        assert_eq!(IdList::new().binary_search("a"), Err(0));
    }

    proptest! {
        #[test]
        fn behaves_as_a_list_of_strings(
            ids in proptest::collection::vec("[a-d]{0,3}", 0..12),
            other in proptest::collection::btree_set("[a-d]{1,3}", 0..12),
            keep in 0usize..14,
        ) {
            let mut list: IdList = ids.iter().collect();
            prop_assert_eq!(list.len(), ids.len());
            prop_assert_eq!(list.to_vec(), ids.clone());
            prop_assert_eq!(list.iter().rev().collect::<Vec<_>>(),
                ids.iter().rev().map(String::as_str).collect::<Vec<_>>());
            prop_assert_eq!(list.text_len(), ids.iter().map(String::len).sum::<usize>());
            let json = serde_json::to_string(&list).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(&ids).unwrap());
            prop_assert_eq!(serde_json::from_str::<IdList>(&json).unwrap(), list.clone());

            let sorted: std::collections::BTreeSet<&str> = ids.iter().map(String::as_str).collect();
            let union: std::collections::BTreeSet<&str> =
                sorted.iter().copied().chain(other.iter().map(String::as_str)).collect();
            let merged = IdList::union(sorted.iter().copied(), other.iter().map(String::as_str));
            prop_assert_eq!(merged.to_vec(), union.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
            prop_assert!(merged.is_sorted_unique());
            for id in &union {
                prop_assert_eq!(merged.binary_search(id).map(|i| merged.get(i)), Ok(Some(*id)));
            }

            list.truncate(keep);
            let kept = &ids[..keep.min(ids.len())];
            prop_assert_eq!(list.to_vec(), kept.to_vec());
            list.push("z");
            prop_assert_eq!(list.last(), Some("z"));
            prop_assert_eq!(list.len(), kept.len() + 1);
        }
    }
}
