//! How the engine's types are written in JSON where serde's default does not do:
//! request bytes as hex text, a duration in microseconds, counters left out when zero. A leaf: the spec, the
//! saved spec and the result all use it, and it uses none of them.

/// Serde: a zero is left out.
pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// A duration as whole microseconds, for JSON.
pub(crate) mod micros {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_micros().min(u64::MAX as u128) as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_micros(u64::deserialize(d)?))
    }
}

/// Bytes as a hex string, for JSON.
pub(crate) mod hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut t = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            t.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
            t.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
        }
        s.serialize_str(&t)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let t = String::deserialize(d)?;
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(serde::de::Error::custom(format!(
                "{:?} is not a hex digit",
                char::from(c)
            ))),
        };
        if t.len() % 2 != 0 {
            return Err(serde::de::Error::custom("hex text of odd length"));
        }
        t.as_bytes()
            .chunks(2)
            .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
            .collect()
    }
}

/// Shared bytes as a hex string, for JSON (see [`hex`]).
pub(crate) mod hex_shared {
    use serde::{Deserializer, Serializer};
    use std::sync::Arc;

    pub fn serialize<S: Serializer>(bytes: &Arc<[u8]>, s: S) -> Result<S::Ok, S::Error> {
        super::hex::serialize(bytes, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[u8]>, D::Error> {
        super::hex::deserialize(d).map(Arc::from)
    }
}

/// An optional shared byte string as an optional hex string.
pub(crate) mod hex_shared_opt {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    #[derive(Serialize, Deserialize)]
    #[serde(transparent)]
    struct Hex(#[serde(with = "super::hex_shared")] Arc<[u8]>);

    pub fn serialize<S: Serializer>(b: &Option<Arc<[u8]>>, s: S) -> Result<S::Ok, S::Error> {
        b.as_ref().map(|b| Hex(b.clone())).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<[u8]>>, D::Error> {
        Option::<Hex>::deserialize(d).map(|h| h.map(|h| h.0))
    }
}

/// A list of shared byte strings as a list of hex strings.
pub(crate) mod hex_shared_list {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    #[derive(Serialize, Deserialize)]
    #[serde(transparent)]
    struct Hex(#[serde(with = "super::hex_shared")] Arc<[u8]>);

    pub fn serialize<S: Serializer>(list: &[Arc<[u8]>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(|b| Hex(b.clone())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Arc<[u8]>>, D::Error> {
        Vec::<Hex>::deserialize(d).map(|v| v.into_iter().map(|h| h.0).collect())
    }
}
