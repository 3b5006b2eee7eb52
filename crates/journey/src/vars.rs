//! A user's variables: one slot per name its journey declares (see
//! [`crate::template::Scope`]), each empty, a text, or a list (an extraction of every
//! match, which a loop walks).

use crate::template::Slot;

/// The longest value a variable holds; an extraction longer than this fails its step.
pub const MAX_VALUE: usize = 64 * 1024;

/// A variable's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
}

impl Value {
    /// Bytes the value holds.
    pub fn len(&self) -> usize {
        match self {
            Value::Text(t) => t.len(),
            Value::List(l) => l.iter().map(String::len).sum(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One user's variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    values: Vec<Option<Value>>,
}

impl Vars {
    /// `n` empty slots.
    pub fn new(n: usize) -> Vars {
        Vars {
            values: vec![None; n],
        }
    }

    /// The value in `slot`, if set.
    pub fn get(&self, slot: Slot) -> Option<&Value> {
        self.values.get(slot.0 as usize).and_then(Option::as_ref)
    }

    /// Sets `slot` (a slot past the end grows the variables to hold it).
    pub fn set(&mut self, slot: Slot, value: Value) {
        let i = slot.0 as usize;
        if i >= self.values.len() {
            self.values.resize(i + 1, None);
        }
        self.values[i] = Some(value);
    }

    /// Empties every slot, keeping their room: a user beginning its journey again.
    pub fn clear(&mut self) {
        self.values.iter_mut().for_each(|v| *v = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_set_read_and_cleared() {
        let mut v = Vars::new(2);
        assert_eq!(v.get(Slot(1)), None);
        v.set(Slot(1), Value::Text("x".into()));
        v.set(Slot(4), Value::List(vec!["a".into(), "bc".into()]));
        assert_eq!(v.get(Slot(1)), Some(&Value::Text("x".into())));
        assert_eq!(v.get(Slot(4)).map(Value::len), Some(3));
        v.clear();
        assert_eq!(v.get(Slot(4)), None);
    }
}
