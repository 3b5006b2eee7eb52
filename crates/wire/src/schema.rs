//! A guard run over a `.proto` file's text before it is compiled: how deep its
//! brackets nest and what its imports name.
//!
//! The compiler that turns `.proto` files into descriptors parses nested messages,
//! enums, option values and aggregate literals by recursion, so a hostile file of a
//! few thousand `message M{` overflows the stack and aborts the process. This scan
//! is a loop, not a recursion: it walks the text once, skipping comments and string
//! literals, and refuses a file whose `{`, `[`, `(` or `<` nest deeper than a limit
//! before the compiler ever sees it. It also names imports that cannot be found the
//! way imports are looked up (an absolute path, or one that climbs with `..`), which
//! the compiler reports only as a misleading syntax error, and what is no `.proto`
//! text at all (control characters, an octal number holding an 8 or 9) before the
//! compiler's lexer meets it.

/// How deep a `.proto` file's brackets may nest. Real schemas nest a few levels;
/// protobuf's own parsers stop recursion at 100.
pub const MAX_NESTING: usize = 100;

/// What the scan refused, with the byte offset where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The brackets opened at `offset` reach `depth`, past [`MAX_NESTING`].
    TooDeep { offset: usize, depth: usize },
    /// An `import` at `offset` names `path`, which is absolute or climbs with `..`.
    Import { offset: usize, path: String },
    /// A control character (NUL, say) at `offset`: a `.proto` file is text.
    Control { offset: usize, byte: u8 },
    /// An integer at `offset` written with a leading zero (octal) holding an 8 or 9.
    Octal { offset: usize },
}

impl Refused {
    /// The byte offset in the text where the problem was seen.
    pub fn offset(&self) -> usize {
        match self {
            Refused::TooDeep { offset, .. }
            | Refused::Import { offset, .. }
            | Refused::Control { offset, .. }
            | Refused::Octal { offset } => *offset,
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooDeep { depth, .. } => write!(
                f,
                "brackets nested {depth} deep, past the limit of {MAX_NESTING} (messages, enums and option values nested in each other)"
            ),
            Refused::Import { path, .. } => write!(
                f,
                "import {path:?}: an import is named relative to an import path (--import-paths DIR); absolute paths and '..' are not looked up"
            ),
            Refused::Control { byte, .. } => write!(
                f,
                "a control character (0x{byte:02x}): a .proto file is text"
            ),
            Refused::Octal { .. } => f.write_str(
                "an integer with a leading zero is octal, and holds an 8 or a 9",
            ),
        }
    }
}

/// Scans `text` and refuses it when its brackets nest past [`MAX_NESTING`] or an
/// import names an absolute path or one with `..`. Unbalanced or malformed text
/// passes: the compiler reports those with their place.
pub fn check(text: &str) -> Result<(), Refused> {
    let b = text.as_bytes();
    if let Some(offset) = b
        .iter()
        .position(|c| c.is_ascii_control() && !matches!(c, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
    {
        return Err(Refused::Control {
            offset,
            byte: b[offset],
        });
    }
    let mut depth = 0usize;
    let mut i = 0;
    // The last word seen outside strings and comments, to know a string follows
    // `import` (or `import public` / `import weak`).
    let mut after_import = false;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
                continue;
            }
            q @ (b'"' | b'\'') => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let end = i.min(b.len());
                if after_import {
                    let path = &text[start + 1..end];
                    if path.starts_with('/')
                        || path.starts_with('\\')
                        || path.split(['/', '\\']).any(|c| c == "..")
                        || path.as_bytes().get(1) == Some(&b':')
                    {
                        return Err(Refused::Import {
                            offset: start,
                            path: path.to_string(),
                        });
                    }
                    after_import = false;
                }
                i = (end + 1).min(b.len());
                continue;
            }
            b'{' | b'[' | b'(' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Refused::TooDeep { offset: i, depth });
                }
                after_import = false;
            }
            b'}' | b']' | b')' | b'>' => {
                depth = depth.saturating_sub(1);
                after_import = false;
            }
            c if c.is_ascii_digit() => {
                // A number: with a leading zero and digits alone it is octal, and an 8
                // or 9 in it is an error the compiler's lexer does not expect.
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n = &b[start..i];
                // A float goes on with a point, or an exponent: e, a sign, digits.
                let digit_at = |k: usize| b.get(k).is_some_and(u8::is_ascii_digit);
                let float = match b.get(i) {
                    Some(b'.') => true,
                    Some(b'e' | b'E') => {
                        digit_at(i + 1)
                            || (matches!(b.get(i + 1), Some(b'+' | b'-')) && digit_at(i + 2))
                    }
                    _ => false,
                };
                if !float && n.len() > 1 && n[0] == b'0' && n.iter().any(|d| *d >= b'8') {
                    return Err(Refused::Octal { offset: start });
                }
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                after_import = false;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                after_import = match word {
                    "import" => true,
                    "public" | "weak" => after_import,
                    _ => false,
                };
                continue;
            }
            c if c.is_ascii_whitespace() => {}
            _ => after_import = false,
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!(
            "syntax=\"proto3\";package d;{}{}",
            "message M{".repeat(n),
            "}".repeat(n)
        )
    }

    #[test]
    fn nesting_to_the_limit_passes_and_past_it_is_refused() {
        assert_eq!(check(&nested(MAX_NESTING)), Ok(()));
        let text = nested(3000);
        let err = check(&text).unwrap_err();
        assert!(matches!(err, Refused::TooDeep { depth, .. } if depth == MAX_NESTING + 1));
        // The offset is the bracket that went past the limit.
        assert_eq!(text.as_bytes()[err.offset()], b'{');
        assert!(err.to_string().contains("past the limit of 100"));
    }

    #[test]
    fn option_values_count_and_brackets_in_strings_and_comments_do_not() {
        let deep_option = format!(
            "option (o) = {}{};",
            "{a:".repeat(MAX_NESTING + 1),
            "}".repeat(MAX_NESTING + 1)
        );
        assert!(matches!(check(&deep_option), Err(Refused::TooDeep { .. })));
        let quiet = format!(
            "// {}\n/* {} */ option x = \"{}\"; option y = '{}\\'{{';",
            "{".repeat(500),
            "[".repeat(500),
            "(".repeat(500),
            "<".repeat(500)
        );
        assert_eq!(check(&quiet), Ok(()));
        // Balanced siblings never add up.
        let wide = "message A{}".repeat(10_000);
        assert_eq!(check(&wide), Ok(()));
    }

    #[test]
    fn imports_that_climb_or_are_absolute_are_named() {
        for bad in [
            "/etc/x.proto",
            "../x.proto",
            "a/../../x.proto",
            "C:/x.proto",
        ] {
            let text = format!("syntax = \"proto3\";\nimport public \"{bad}\";\n");
            match check(&text) {
                Err(Refused::Import { path, offset }) => {
                    assert_eq!(path, bad);
                    assert_eq!(&text[offset..offset + 1], "\"");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let ok =
            "syntax = \"proto3\"; import \"google/protobuf/empty.proto\"; option (a) = \"../x\";";
        assert_eq!(check(ok), Ok(()));
    }

    #[test]
    fn control_characters_are_refused_where_they_are() {
        let text = "syntax = \"proto3\";\nmessage M { uint32 a = 1\0; }\n";
        let e = check(text).unwrap_err();
        assert_eq!(
            e,
            Refused::Control {
                offset: 43,
                byte: 0
            }
        );
        assert_eq!(check("message M {\t}\r\n\x0c"), Ok(()));
        assert_eq!(check("x = 0009;"), Err(Refused::Octal { offset: 4 }));
        assert_eq!(check("x = 0089n;"), Err(Refused::Octal { offset: 4 }));
        assert_eq!(check("x = 0089e name;"), Err(Refused::Octal { offset: 4 }));
        for ok in [
            "x = 0017;",
            "x = 0x1F;",
            "x = 09.5;",
            "x = 09e1;",
            "x = 90;",
            "x = 0;",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn unterminated_text_passes_to_the_compiler() {
        for text in ["\"abc", "/* open", "message M {", "}}}}", "'\\"] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
    }
}
