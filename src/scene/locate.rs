//! Where things are in a scene file: a structural scanner of RON text that
//! records, for every value, its path (`bodies[2].shape.radius`) and its byte
//! span. Serde forgets positions once a file is parsed; this map gives them
//! back so that a validation error can name the line and column of the
//! offending field, and `--set PATH=VALUE` can rewrite exactly that value.
//!
//! The scanner follows ron 0.12's lexical grammar (`ron/src/parse.rs`):
//! whitespace as `is_whitespace_char`, `//` line comments, *nested* `/* */`
//! block comments, `"…"` strings with escapes, raw strings `r#"…"#` with any
//! number of `#`, byte strings `b"…"` / `br#"…"#`, char literals `'x'`, raw
//! identifiers `r#name`. Nesting is bounded by [`MAX_DEPTH`], so no input can
//! exhaust the stack; every offset it records lies on a character boundary of
//! the text, so slicing with it cannot panic.

use std::collections::HashMap;

/// The deepest nesting of `(`, `[`, `{` and `Some(` the scanner follows.
/// ron's own recursion limit (128, `ron::Options::default`) rejects deeper
/// files first, so every file ron accepts is scanned whole.
pub const MAX_DEPTH: usize = 256;

/// One located value.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// Byte range of the value's text (for `Some(x)`: of `x`).
    pub start: usize,
    /// End of the value's text (exclusive).
    pub end: usize,
    /// For a struct-like value `Name( … )`: byte offset just after its `(`,
    /// where a missing field can be inserted.
    pub open: Option<usize>,
}

/// Why the scanner stopped before the end of the text.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanError {
    /// Byte offset where it stopped.
    pub offset: usize,
    /// What it met there.
    pub message: String,
}

/// Paths → spans for one scene text.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    spans: HashMap<String, Located>,
    line_starts: Vec<usize>,
    text: String,
    error: Option<ScanError>,
}

impl SourceMap {
    /// Scans `text`. Never fails: text it cannot follow (already a syntax
    /// error, reported by the parser) yields fewer paths and [`Self::error`].
    pub fn new(text: &str) -> Self {
        let mut map = SourceMap {
            spans: HashMap::new(),
            line_starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect(),
            text: text.to_string(),
            error: None,
        };
        let mut s = Scanner::new(text, Some(&mut map.spans));
        let _ = s.skip_ws().and_then(|()| s.value(String::new(), 0)).and_then(|()| s.skip_ws());
        map.error = s.error;
        map
    }

    /// Checks that `text` is exactly one RON value, without comments and
    /// nesting at most `MAX_DEPTH` deep (what `--set PATH=VALUE` may put
    /// into a scene: anything else could comment out or add to its
    /// surroundings).
    pub fn check_single_value(text: &str) -> Result<(), String> {
        let mut s = Scanner::new(text, None);
        if text.trim().is_empty() {
            return Err("the value is empty".into());
        }
        let _ = s.skip_ws().and_then(|()| s.value(String::new(), 0));
        if let Some(e) = s.error {
            return Err(format!("{} at byte {}", e.message, e.offset));
        }
        if s.comments > 0 {
            return Err("a value cannot contain comments".into());
        }
        if s.i != text.len() {
            return Err(format!("the value must be one RON value; '{}' follows it", &text[s.i..]));
        }
        Ok(())
    }

    /// Where and why the scanner stopped early, if it did.
    pub fn error(&self) -> Option<&ScanError> {
        self.error.as_ref()
    }

    /// The span of the value at `path` (indices or, for lists of named things,
    /// names: `bodies.wheel.mass` ≡ `bodies[k].mass` where `bodies[k].name`
    /// is `"wheel"`).
    pub fn get(&self, path: &str) -> Option<&Located> {
        self.resolve(path).and_then(|p| self.spans.get(&p))
    }

    /// Turns a dotted user path into the canonical indexed path, resolving
    /// element names (written in any RON string form: escaped or raw); the
    /// last parts may be fields that are absent from the file.
    pub fn resolve(&self, path: &str) -> Option<String> {
        let mut canon = String::new();
        for part in split_path(path) {
            let candidate = join(&canon, &part);
            if self.spans.contains_key(&candidate) {
                canon = candidate;
                continue;
            }
            // A name selecting a list element, or a numeric index.
            let mut found = None;
            for k in 0.. {
                let elem = format!("{canon}[{k}]");
                if !self.spans.contains_key(&elem) {
                    break;
                }
                let name = self.text_at(&format!("{elem}.name")).and_then(|t| ron::from_str::<String>(&t).ok());
                if part == k.to_string() || name.as_deref() == Some(part.as_str()) {
                    found = Some(elem);
                    break;
                }
            }
            canon = found.unwrap_or(candidate);
        }
        Some(canon)
    }

    /// The raw text of the value at a canonical path.
    pub fn text_at(&self, canon: &str) -> Option<String> {
        self.spans.get(canon).and_then(|l| self.text.get(l.start..l.end)).map(str::to_string)
    }

    /// Whether the canonical path exists.
    pub fn contains(&self, canon: &str) -> bool {
        self.spans.contains_key(canon)
    }

    /// The span at a canonical path.
    pub fn span(&self, canon: &str) -> Option<&Located> {
        self.spans.get(canon)
    }

    /// The shortest existing path under `base` whose last part is `name`
    /// (`surfaces[0]` + `friction` → `surfaces[0].friction`, `bodies[1].shape`
    /// + `radius` → `bodies[1].shape.radius`).
    pub fn descendant_named(&self, base: &str, name: &str) -> Option<String> {
        if name.is_empty() {
            return None;
        }
        let suffix = format!(".{name}");
        self.spans
            .keys()
            .filter(|k| k.starts_with(base) && k.ends_with(&suffix) && k.len() > base.len())
            .min_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
            .cloned()
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(&self.text, &self.line_starts, offset)
    }

    /// The byte offset of a 1-based (line, column), the column counting
    /// characters (ron's `Position`); clamped to the text.
    pub fn offset_of(&self, line: usize, column: usize) -> usize {
        let Some(&start) = self.line_starts.get(line.max(1) - 1) else { return self.text.len() };
        let rest = &self.text[start..];
        rest.char_indices().nth(column.max(1) - 1).map_or(self.text.len(), |(i, _)| start + i)
    }

    /// The canonical path of the innermost value at byte `offset`: the
    /// smallest recorded span holding it, where a value that starts after
    /// only whitespace from `offset` counts as holding it (the parser
    /// reports a wrong value at the blank before it). `None` for the whole
    /// file (the root's path is empty) or where nothing was recorded.
    pub fn path_at(&self, offset: usize) -> Option<String> {
        let blank = self.text.get(offset..).map_or(0, |r| r.len() - r.trim_start().len());
        let inner = |l: &Located| l.start <= offset + blank && offset < l.end.max(l.start + 1);
        self.spans
            .iter()
            .filter(|(path, l)| !path.is_empty() && inner(l))
            .min_by(|(pa, a), (pb, b)| {
                // The smallest span; of equal ones (`Some(x)`), the deeper path.
                (a.end - a.start).cmp(&(b.end - b.start)).then_with(|| pb.len().cmp(&pa.len())).then_with(|| pa.cmp(pb))
            })
            .map(|(p, _)| p.clone())
    }

    /// The (line, column) of the deepest existing value on `path` (walking up
    /// to the parent when the field itself is absent).
    pub fn position_of(&self, path: &str) -> Option<(usize, usize)> {
        let mut p = path.to_string();
        loop {
            if let Some(l) = self.spans.get(&p) {
                return Some(self.line_col(l.start));
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }
}

/// 1-based (line, column) of byte `offset` in `text`, counting characters;
/// an offset inside a character or past the end is clamped.
pub fn line_col_of(text: &str, offset: usize) -> (usize, usize) {
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    line_col(text, &starts, offset)
}

fn line_col(text: &str, line_starts: &[usize], offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let line = line_starts.partition_point(|&s| s <= offset).max(1);
    let start = line_starts[line - 1];
    let col = text.get(start..offset).map_or_else(
        // Not on a character boundary: count the whole characters before it.
        || String::from_utf8_lossy(&text.as_bytes()[start..offset]).chars().count(),
        |s| s.chars().count() + 1,
    );
    (line, col.max(1))
}

fn split_path(path: &str) -> Vec<String> {
    path.replace('[', ".").replace(']', "").split('.').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn join(base: &str, part: &str) -> String {
    if part.chars().all(|c| c.is_ascii_digit()) {
        format!("{base}[{part}]")
    } else if base.is_empty() {
        part.to_string()
    } else {
        format!("{base}.{part}")
    }
}

/// ron's whitespace (`ron::parse::is_whitespace_char`).
fn is_ws(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | '\r' | '\x0B' | '\x0C' | '\u{85}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
    )
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Characters of a number or other bare scalar (`-1.5e3`, `0x1F`, `1_000`, `inf`).
fn is_scalar(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')
}

/// Stops the scan (the error is kept in `Scanner::error`).
struct Stop;

struct Scanner<'a> {
    s: &'a str,
    i: usize,
    out: Option<&'a mut HashMap<String, Located>>,
    error: Option<ScanError>,
    comments: usize,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str, out: Option<&'a mut HashMap<String, Located>>) -> Self {
        Scanner { s, i: 0, out, error: None, comments: 0 }
    }

    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Advances past one character (no-op at the end).
    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.i += c.len_utf8();
        }
    }

    fn eat(&mut self, prefix: &str) -> bool {
        let yes = self.rest().starts_with(prefix);
        if yes {
            self.i += prefix.len();
        }
        yes
    }

    fn fail(&mut self, offset: usize, message: impl Into<String>) -> Result<(), Stop> {
        self.error.get_or_insert(ScanError { offset, message: message.into() });
        self.i = self.s.len();
        Err(Stop)
    }

    fn skip_ws(&mut self) -> Result<(), Stop> {
        loop {
            while self.peek().is_some_and(is_ws) {
                self.bump();
            }
            let start = self.i;
            if self.eat("//") {
                self.comments += 1;
                self.i = self.rest().find('\n').map_or(self.s.len(), |k| self.i + k);
            } else if self.eat("/*") {
                // Block comments nest, as in ron (`Parser::skip_comment`).
                self.comments += 1;
                let mut level = 1usize;
                while level > 0 {
                    if self.eat("/*") {
                        level += 1;
                    } else if self.eat("*/") {
                        level -= 1;
                    } else if self.peek().is_some() {
                        self.bump();
                    } else {
                        return self.fail(start, "unclosed block comment");
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    /// `"…"` (the opening quote already eaten): up to the closing quote,
    /// skipping escaped characters.
    fn escaped_string(&mut self, start: usize) -> Result<(), Stop> {
        loop {
            match self.peek() {
                None => return self.fail(start, "unterminated string"),
                Some('\\') => {
                    self.bump();
                    self.bump();
                }
                Some('"') => {
                    self.bump();
                    return Ok(());
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// `#…#"…"#…#` after the `r` of a raw string: up to `"` and as many `#`.
    fn raw_string(&mut self, start: usize) -> Result<(), Stop> {
        let hashes = self.rest().bytes().take_while(|&b| b == b'#').count();
        self.i += hashes;
        if !self.eat("\"") {
            return self.fail(start, "expected '\"' in a raw string");
        }
        let close = format!("\"{}", "#".repeat(hashes));
        match self.rest().find(&close) {
            Some(k) => {
                self.i += k + close.len();
                Ok(())
            }
            None => self.fail(start, "unterminated raw string"),
        }
    }

    /// `'x'`, `'\n'`, `'\u{1F600}'` (the opening quote already eaten).
    fn char_literal(&mut self, start: usize) -> Result<(), Stop> {
        if self.peek() == Some('\\') {
            self.bump();
        }
        self.bump();
        while self.peek().is_some_and(|c| c != '\'' && c != '\n') {
            self.bump();
        }
        if self.eat("'") { Ok(()) } else { self.fail(start, "unterminated character literal") }
    }

    /// Scans one value at `path`, recording its span.
    fn value(&mut self, path: String, depth: usize) -> Result<(), Stop> {
        let start = self.i;
        if depth > MAX_DEPTH {
            return self.fail(start, format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        let Some(c) = self.peek() else {
            return self.fail(start, "expected a value, found the end of the text");
        };
        let rest = self.rest();
        if c == '"' {
            self.bump();
            self.escaped_string(start)?;
        } else if rest.starts_with("r\"") || rest.starts_with("r#\"") || rest.starts_with("r##") {
            self.bump();
            self.raw_string(start)?;
        } else if rest.starts_with("b\"") {
            self.i += 2;
            self.escaped_string(start)?;
        } else if rest.starts_with("br\"") || rest.starts_with("br#") {
            self.i += 2;
            self.raw_string(start)?;
        } else if rest.starts_with("b'") {
            self.i += 2;
            self.char_literal(start)?;
        } else if c == '\'' {
            self.bump();
            self.char_literal(start)?;
        } else if let Some(close) = match c {
            '(' => Some(')'),
            '[' => Some(']'),
            '{' => Some('}'),
            _ => None,
        } {
            self.bump();
            let open = self.i;
            self.items(&path, close, depth)?;
            self.record(path, start, (c == '(').then_some(open));
            return Ok(());
        } else if is_ident_start(c) || rest.starts_with("r#") {
            let raw = self.eat("r#");
            let name_start = self.i;
            while self.peek().is_some_and(|c| is_ident_continue(c) || (raw && matches!(c, '.' | '+' | '-'))) {
                self.bump();
            }
            let name_end = self.i;
            if !raw && self.peek().is_some_and(is_scalar) {
                // Not an identifier after all (`inf`-like scalars are fine).
                while self.peek().is_some_and(is_scalar) {
                    self.bump();
                }
                self.record(path, start, None);
                return Ok(());
            }
            let end = self.i;
            self.skip_ws()?;
            if self.peek() == Some('(') {
                self.bump();
                if !raw && &self.s[name_start..name_end] == "Some" {
                    // Transparent wrapper: the inner value takes the path.
                    self.skip_ws()?;
                    self.value(path, depth + 1)?;
                    self.skip_ws()?;
                    if !self.eat(")") {
                        return self.fail(self.i, "expected ')' closing Some(");
                    }
                    return Ok(());
                }
                let open = self.i;
                self.items(&path, ')', depth)?;
                self.record(path, start, Some(open));
            } else {
                self.i = end;
                self.record(path, start, None);
            }
            return Ok(());
        } else if is_scalar(c) {
            while self.peek().is_some_and(is_scalar) {
                self.bump();
            }
        } else {
            return self.fail(start, format!("unexpected character '{}'", c.escape_debug()));
        }
        self.record(path, start, None);
        Ok(())
    }

    fn record(&mut self, path: String, start: usize, open: Option<usize>) {
        if let Some(out) = self.out.as_deref_mut() {
            out.insert(path, Located { start, end: self.i, open });
        }
    }

    /// Items up to `close`: `name: value` (struct fields), `key: value` (map
    /// entries, indexed by position) or positional values.
    fn items(&mut self, path: &str, close: char, depth: usize) -> Result<(), Stop> {
        let mut index = 0;
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => return self.fail(self.i, format!("expected '{close}', found the end of the text")),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(());
                }
                _ => {}
            }
            // A field `ident :` — else a positional value (or a map key).
            let mut field = None;
            if close != '}' && self.peek().is_some_and(|c| is_ident_start(c) || c == 'r') {
                let save = self.i;
                let raw = self.eat("r#");
                let name_start = self.i;
                while self.peek().is_some_and(|c| is_ident_continue(c) || (raw && matches!(c, '.' | '+' | '-'))) {
                    self.bump();
                }
                let name = self.s[name_start..self.i].to_string();
                self.skip_ws()?;
                if !name.is_empty() && self.eat(":") {
                    field = Some(name);
                } else {
                    self.i = save;
                }
            }
            self.skip_ws()?;
            let child = match field {
                Some(name) => join(path, &name),
                None => format!("{path}[{index}]"),
            };
            if close == '}' {
                // Map entry: the key is scanned (for strings and comments) but not recorded.
                let out = self.out.take();
                let key = self.value(String::new(), depth + 1);
                self.out = out;
                key?;
                self.skip_ws()?;
                if !self.eat(":") {
                    return self.fail(self.i, "expected ':' after a map key");
                }
                self.skip_ws()?;
            }
            self.value(child, depth + 1)?;
            index += 1;
            self.skip_ws()?;
            match self.peek() {
                Some(',') => self.bump(),
                Some(c) if c == close => {}
                None => return self.fail(self.i, format!("expected '{close}', found the end of the text")),
                Some(c) => {
                    return self.fail(self.i, format!("expected ',' or '{close}', found '{}'", c.escape_debug()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"Scene( // comment
    name: "demo",
    bodies: [
        Body(name: "a", shape: Circle(radius: 0.5), mass: Some(2.0)),
        Body(
            name: "wheel",
            /* block */ shape: Ellipse(a: 1.0, b: 0.5),
            position: (1.0, -2.0),
        ),
    ],
)"#;

    #[test]
    fn paths_spans_and_positions() {
        let m = SourceMap::new(TEXT);
        assert_eq!(m.text_at("bodies[0].shape.radius").as_deref(), Some("0.5"));
        assert_eq!(m.text_at("bodies[0].mass").as_deref(), Some("2.0"));
        assert_eq!(m.text_at("bodies[1].position[1]").as_deref(), Some("-2.0"));
        assert_eq!(m.resolve("bodies.wheel.shape.a").as_deref(), Some("bodies[1].shape.a"));
        assert_eq!(m.resolve("bodies.1.position").as_deref(), Some("bodies[1].position"));
        assert_eq!(m.position_of("bodies[1].shape.b"), Some((7, 51)));
        // An absent field falls back to its parent's position.
        assert_eq!(m.position_of("bodies[0].velocity"), Some((4, 9)));
    }

    #[test]
    fn comments_nest_and_raw_strings_hide_their_content() {
        // ron nests block comments and does not look inside raw strings: a
        // `dt:` there is text, and the real `dt` is the one after them.
        let text = "Scene( /* old: /* note */ dt: 0.5 */ description: r##\"a \"# dt: 0.7 ( [\"##, dt: 0.001)";
        let m = SourceMap::new(text);
        assert_eq!(m.error(), None);
        assert_eq!(m.text_at("dt").as_deref(), Some("0.001"));
        assert_eq!(m.text_at("description").as_deref(), Some("r##\"a \"# dt: 0.7 ( [\"##"));
        let m = SourceMap::new("Scene(a: 'x', b: '\\'', c: b\"q\\\"\", d: br#\"z\"#, e: r#raw, f: 1_000, g: -inf)");
        assert_eq!(m.error(), None);
        for (path, want) in [("b", "'\\''"), ("c", "b\"q\\\"\""), ("d", "br#\"z\"#"), ("e", "r#raw"), ("g", "-inf")] {
            assert_eq!(m.text_at(path).as_deref(), Some(want), "{path}");
        }
    }

    #[test]
    fn names_are_matched_as_ron_strings() {
        let m = SourceMap::new(r##"S(bodies: [B(name: r#"b"#), B(name: "c\u{64}")])"##);
        assert_eq!(m.resolve("bodies.b").as_deref(), Some("bodies[0]"));
        assert_eq!(m.resolve("bodies.cd").as_deref(), Some("bodies[1]"));
    }

    #[test]
    fn nesting_is_bounded_without_recursion_past_the_limit() {
        // 100k open brackets would overflow the stack of a recursive scanner
        // without a bound; this one stops at MAX_DEPTH with a positioned error.
        let text = format!("Scene(x: {})", "[".repeat(100_000));
        let m = SourceMap::new(&text);
        let e = m.error().expect("too deep");
        assert!(e.message.contains("nesting deeper"), "{e:?}");
        assert_eq!(e.offset, 9 + MAX_DEPTH, "the first bracket past the limit");
        assert!(SourceMap::check_single_value(&"(".repeat(100_000)).is_err());
    }

    #[test]
    fn truncated_and_odd_text_never_yields_a_bad_offset() {
        // Every prefix of a text with multi-byte characters and escapes: the
        // spans recorded must slice the text (char boundaries, within bounds).
        let text = "Scene(name: \"é\\\"ω\", d: r#\"ü\"#, x: 'ß', y: [1, (2, \"\\\\\")])";
        for cut in (0..=text.len()).filter(|&k| text.is_char_boundary(k)) {
            let t = &text[..cut];
            let m = SourceMap::new(t);
            for key in m.spans.keys() {
                let l = &m.spans[key];
                assert!(t.get(l.start..l.end).is_some(), "{t:?}: {key} {l:?}");
            }
            if let Some(e) = m.error() {
                assert!(t.is_char_boundary(e.offset.min(t.len())));
            }
        }
    }

    #[test]
    fn a_set_value_must_be_exactly_one_value() {
        for good in ["1", "-1.5e3", "(0, -1.62)", "Bar(length: 1.0, width: 0.1)", "Some(2.0)", "r#\"a//b\"#", "[1, 2]"]
        {
            assert_eq!(SourceMap::check_single_value(good), Ok(()), "{good}");
        }
        for bad in ["", "1, name: \"x\"", "1 // c", "/* c */ 1", "(1, 2", "\"abc", "1)", "r#\"a\""] {
            assert!(SourceMap::check_single_value(bad).is_err(), "{bad}");
        }
    }
}
