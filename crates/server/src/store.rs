//! The in-memory user store behind `/quacker` and the computation behind `/biteq`.
//!
//! The reference experiment looked users up by a 14-character ID such as
//! `b9ogpt96K0NmkI`. The store is generated deterministically at start (10,000 users,
//! that ID among them); an ID of the right shape that is not stored maps onto a stored
//! user by hash, so every well-formed lookup is a real map lookup that hits.

use std::collections::HashMap;

/// Users generated at start.
pub const USERS: usize = 10_000;
/// The ID used in the reference experiment.
pub const REFERENCE_ID: &str = "b9ogpt96K0NmkI";

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A generated user.
#[derive(Debug, Clone, Copy)]
pub struct User {
    /// How many quacks the user has posted: two digits, so answers have a fixed size.
    pub quacks: u8,
}

/// The store.
pub struct Store {
    by_id: HashMap<[u8; 14], User>,
    ids: Vec<[u8; 14]>,
}

/// True for IDs of the reference shape: 14 ASCII letters or digits.
pub fn valid_id(id: &[u8]) -> bool {
    id.len() == 14 && id.iter().all(|b| b.is_ascii_alphanumeric())
}

/// FNV-1a, 64 bits.
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Store {
    /// Generates the store.
    pub fn generate() -> Store {
        let mut by_id = HashMap::with_capacity(USERS);
        let mut ids = Vec::with_capacity(USERS);
        let mut state: u64 = 0x5eed;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        let mut reference = [0u8; 14];
        reference.copy_from_slice(REFERENCE_ID.as_bytes());
        ids.push(reference);
        while ids.len() < USERS {
            let mut id = [0u8; 14];
            for b in &mut id {
                *b = ALPHABET[next() % ALPHABET.len()];
            }
            ids.push(id);
        }
        for id in &ids {
            let quacks = 10 + (next() % 90) as u8;
            by_id.insert(*id, User { quacks });
        }
        Store { by_id, ids }
    }

    /// Looks a well-formed ID up; `None` for a malformed one.
    pub fn lookup(&self, id: &[u8]) -> Option<User> {
        if !valid_id(id) {
            return None;
        }
        let mut key = [0u8; 14];
        key.copy_from_slice(id);
        if let Some(u) = self.by_id.get(&key) {
            return Some(*u);
        }
        let other = &self.ids[(fnv1a(id) % self.ids.len() as u64) as usize];
        self.by_id.get(other).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_id_is_stored_and_shapes_are_checked() {
        let s = Store::generate();
        assert!(s.lookup(REFERENCE_ID.as_bytes()).is_some());
        assert!(s.lookup(b"zzzzzzzzzzzzzz").is_some());
        assert!(s.lookup(b"short").is_none());
        assert!(s.lookup(b"b9ogpt96K0Nmk!").is_none());
        let q = s.lookup(REFERENCE_ID.as_bytes()).unwrap().quacks;
        assert!((10..100).contains(&q));
    }
}
