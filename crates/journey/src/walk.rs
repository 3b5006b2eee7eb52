//! The order a user takes a journey's steps in: the steps in the file's order, with
//! groups that repeat (a count of times, or once for each item of a list an earlier
//! step captured) and conditions that skip a step or a group. A journey is read into
//! a flat list of [`Op`]s with the groups' bounds resolved, and each user keeps a
//! [`Cursor`] into it; [`Cursor::next`] walks past what is skipped and round what
//! loops to the next step to send.

use std::time::Duration;

use crate::cond::Cond;
use crate::journey::Think;
use crate::template::{Draw, Slot, Template};
use crate::vars::{Value, Vars};

/// The most times a group repeats, by count or by the items of a list.
pub const MAX_TURNS: u32 = 10_000;
/// How deep groups nest.
pub const MAX_DEPTH: usize = 4;
/// The most ops one [`Cursor::next`] walks before it gives up on finding a step: a
/// loop whose steps are all skipped, many times over.
pub const MAX_WALK: u32 = 100_000;
/// The most log lines one walk between two steps keeps.
const MAX_SAID: usize = 64;

/// One place in a journey.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A request: its index among the journey's steps, and when it is taken.
    Step { step: usize, when: Option<Cond> },
    /// A group begins: taken when `when` holds, as many times as `repeat` says; when
    /// it is not, the walk goes on after its [`Op::Leave`] at `leave`.
    Enter {
        when: Option<Cond>,
        repeat: Repeat,
        /// Set to the turn's number (`from`, `from + 1`, …) in each turn.
        index: Option<(Slot, u32)>,
        leave: usize,
    },
    /// A group ends: another turn from its [`Op::Enter`] at `enter`, or on.
    Leave { enter: usize },
    /// A pause before the next step, on top of the think time of the step before.
    Pause(Think),
    /// A line the user writes to the log when it passes here.
    Log(Template),
}

/// How many times a group is taken.
#[derive(Debug, Clone, PartialEq)]
pub enum Repeat {
    Count(u32),
    /// Once for each item of the list in `list` (a text is one item, no value none),
    /// the item in `item`.
    Over {
        list: Slot,
        item: Slot,
    },
}

/// A group being taken: where it began, its turn, and the items it walks.
#[derive(Debug, Clone)]
struct Turn {
    enter: usize,
    turn: u32,
    of: u32,
    items: Vec<String>,
}

/// Why a walk found no step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stuck;

/// A user's place in its journey.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    at: usize,
    turns: Vec<Turn>,
    /// Pauses walked past since the last step, to wait before the next.
    pause: Duration,
    /// Log lines written since they were last taken.
    said: Vec<String>,
}

impl Cursor {
    /// Back to the journey's start.
    pub fn reset(&mut self) {
        self.at = 0;
        self.turns.clear();
        self.pause = Duration::ZERO;
        self.said.clear();
    }

    /// The pauses walked past since this was last asked.
    pub fn take_pause(&mut self) -> Duration {
        std::mem::take(&mut self.pause)
    }

    /// The log lines written since this was last asked.
    pub fn take_said(&mut self) -> std::vec::Drain<'_, String> {
        self.said.drain(..)
    }

    /// Past the step the cursor is on (its answer is in).
    pub fn advance(&mut self) {
        self.at += 1;
    }

    /// The next step to send from where the cursor is — the index of the step, which
    /// the cursor stays on — or `None` when the journey is over. Groups set their
    /// item and index variables in `vars` as their turns begin. `Stuck` when more
    /// than [`MAX_WALK`] places were walked without a step to send.
    pub fn next(
        &mut self,
        ops: &[Op],
        vars: &mut Vars,
        draw: &mut Draw,
    ) -> Result<Option<usize>, Stuck> {
        for _ in 0..MAX_WALK {
            let Some(op) = ops.get(self.at) else {
                return Ok(None);
            };
            match op {
                Op::Step { step, when } => {
                    if when.as_ref().is_none_or(|c| c.holds(vars)) {
                        return Ok(Some(*step));
                    }
                    self.at += 1;
                }
                Op::Enter {
                    when,
                    repeat,
                    index,
                    leave,
                } => {
                    let (of, items) = match repeat {
                        _ if when.as_ref().is_some_and(|c| !c.holds(vars)) => (0, Vec::new()),
                        Repeat::Count(n) => (*n, Vec::new()),
                        Repeat::Over { list, .. } => {
                            let items = match vars.get(*list) {
                                None => Vec::new(),
                                Some(Value::Text(t)) => {
                                    json_items(t).unwrap_or_else(|| vec![t.clone()])
                                }
                                Some(Value::List(l)) => l.clone(),
                            };
                            (items.len().min(MAX_TURNS as usize) as u32, items)
                        }
                    };
                    if of == 0 {
                        self.at = leave + 1;
                        continue;
                    }
                    self.turns.push(Turn {
                        enter: self.at,
                        turn: 0,
                        of,
                        items,
                    });
                    begin_turn(repeat, *index, self.turns.last().expect("pushed"), vars);
                    self.at += 1;
                }
                Op::Pause(t) => {
                    self.pause += t.draw(draw);
                    self.at += 1;
                }
                Op::Log(t) => {
                    if self.said.len() < MAX_SAID {
                        let line = t.render_string(vars, draw).unwrap_or_else(|e| {
                            format!("(a log line that cannot be written: {e:?})")
                        });
                        self.said.push(line);
                    }
                    self.at += 1;
                }
                Op::Leave { enter } => {
                    let Some(t) = self.turns.last_mut() else {
                        // A journey read from a file pairs its groups; nothing to repeat.
                        self.at += 1;
                        continue;
                    };
                    debug_assert_eq!(t.enter, *enter);
                    t.turn += 1;
                    if t.turn < t.of {
                        if let Op::Enter { repeat, index, .. } = &ops[t.enter] {
                            begin_turn(repeat, *index, t, vars);
                        }
                        self.at = t.enter + 1;
                    } else {
                        self.turns.pop();
                        self.at += 1;
                    }
                }
            }
        }
        Err(Stuck)
    }
}

/// A captured JSON array's items, each as text (a string unquoted): what a loop over
/// it walks.
fn json_items(t: &str) -> Option<Vec<String>> {
    if !t.trim_start().starts_with('[') {
        return None;
    }
    let serde_json::Value::Array(a) = serde_json::from_str(t).ok()? else {
        return None;
    };
    Some(
        a.into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .collect(),
    )
}

fn begin_turn(repeat: &Repeat, index: Option<(Slot, u32)>, t: &Turn, vars: &mut Vars) {
    if let Some((i, from)) = index {
        vars.set(
            i,
            Value::Text((u64::from(from) + u64::from(t.turn)).to_string()),
        );
    }
    if let Repeat::Over { item, .. } = repeat {
        let v = t.items.get(t.turn as usize).cloned().unwrap_or_default();
        vars.set(*item, Value::Text(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Scope;

    fn walk(ops: &[Op], vars: &mut Vars) -> Vec<usize> {
        let mut c = Cursor::default();
        let mut seen = Vec::new();
        while let Some(s) = c.next(ops, vars, &mut Draw::new(1, (0, 1))).unwrap() {
            seen.push(s);
            c.advance();
            assert!(seen.len() < 100);
        }
        seen
    }

    #[test]
    fn groups_repeat_by_count_and_over_a_list_and_conditions_skip() {
        let mut scope = Scope::default();
        let (ids, item, i, flag) = (
            scope.declare("ids").unwrap(),
            scope.declare("item").unwrap(),
            scope.declare("i").unwrap(),
            scope.declare("flag").unwrap(),
        );
        let cond = |l: &str| Some(Cond::parse(l, &scope, "if").unwrap());
        // 0; [1, 2 if flag] x over ids; [3] x 2 with index; 4 if ids > 2
        let ops = vec![
            Op::Step {
                step: 0,
                when: None,
            },
            Op::Enter {
                when: None,
                repeat: Repeat::Over { list: ids, item },
                index: None,
                leave: 4,
            },
            Op::Step {
                step: 1,
                when: None,
            },
            Op::Step {
                step: 2,
                when: cond("flag exists"),
            },
            Op::Leave { enter: 1 },
            Op::Enter {
                when: cond("ids exists"),
                repeat: Repeat::Count(2),
                index: Some((i, 0)),
                leave: 7,
            },
            Op::Step {
                step: 3,
                when: None,
            },
            Op::Leave { enter: 5 },
            Op::Step {
                step: 4,
                when: cond("ids > 2"),
            },
        ];
        let mut v = Vars::new(scope.len());
        assert_eq!(walk(&ops, &mut v), [0]);
        v.set(ids, Value::List(vec!["a".into(), "b".into()]));
        assert_eq!(walk(&ops, &mut v), [0, 1, 1, 3, 3]);
        assert_eq!(v.get(item), Some(&Value::Text("b".into())));
        assert_eq!(v.get(i), Some(&Value::Text("1".into())));
        v.set(flag, Value::Text("y".into()));
        v.set(ids, Value::List(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(walk(&ops, &mut v), [0, 1, 2, 1, 2, 1, 2, 3, 3, 4]);
        // A text is a list of one.
        v.set(ids, Value::Text("z".into()));
        assert_eq!(walk(&ops, &mut v), [0, 1, 2, 3, 3]);
    }

    #[test]
    fn a_loop_with_nothing_to_send_is_stuck_not_spinning() {
        let mut scope = Scope::default();
        let flag = scope.declare("flag").unwrap();
        let ops = vec![
            Op::Enter {
                when: None,
                repeat: Repeat::Count(MAX_TURNS),
                index: None,
                leave: 6,
            },
            Op::Enter {
                when: None,
                repeat: Repeat::Count(MAX_TURNS),
                index: None,
                leave: 3,
            },
            Op::Step {
                step: 0,
                when: Some(Cond::parse("flag exists", &scope, "if").unwrap()),
            },
            Op::Leave { enter: 1 },
            Op::Step {
                step: 1,
                when: None,
            },
            Op::Step {
                step: 2,
                when: None,
            },
            Op::Leave { enter: 0 },
        ];
        let mut v = Vars::new(1);
        let mut c = Cursor::default();
        // Ten thousand turns of a skipped step, then step 1.
        assert_eq!(c.next(&ops, &mut v, &mut Draw::new(1, (0, 1))), Ok(Some(1)));
        c.advance();
        assert_eq!(c.next(&ops, &mut v, &mut Draw::new(1, (0, 1))), Ok(Some(2)));
        c.advance();
        let ops2 = [&ops[..4], &[Op::Leave { enter: 0 }][..]].concat();
        let ops2: Vec<Op> = ops2
            .into_iter()
            .map(|o| match o {
                Op::Enter {
                    leave: 6,
                    when,
                    repeat,
                    index,
                } => Op::Enter {
                    leave: 4,
                    when,
                    repeat,
                    index,
                },
                o => o,
            })
            .collect();
        c.reset();
        assert_eq!(c.next(&ops2, &mut v, &mut Draw::new(1, (0, 1))), Err(Stuck));
        v.set(flag, Value::Text(String::new()));
        c.reset();
        assert_eq!(
            c.next(&ops2, &mut v, &mut Draw::new(1, (0, 1))),
            Ok(Some(0))
        );
    }
}
