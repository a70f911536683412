//! Where things are in a scene file: a small structural scanner of RON text
//! that records, for every value, its path (`bodies[2].shape.radius`) and its
//! byte span. Serde forgets positions once a file is parsed; this map gives
//! them back so that a validation error can name the line and column of the
//! offending field, and `--set PATH=VALUE` can rewrite exactly that value.

use std::collections::HashMap;

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

/// Paths → spans for one scene text.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    spans: HashMap<String, Located>,
    line_starts: Vec<usize>,
    text: String,
}

impl SourceMap {
    /// Scans `text`. Never fails: text it cannot follow (already a syntax
    /// error, reported by the parser) simply yields fewer paths.
    pub fn new(text: &str) -> Self {
        let mut map = SourceMap {
            spans: HashMap::new(),
            line_starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect(),
            text: text.to_string(),
        };
        let mut s = Scanner { b: text.as_bytes(), i: 0, out: &mut map.spans };
        s.skip_ws();
        s.value(String::new());
        map
    }

    /// The span of the value at `path` (indices or, for lists of named things,
    /// names: `bodies.wheel.mass` ≡ `bodies[k].mass` where `bodies[k].name`
    /// is `"wheel"`).
    pub fn get(&self, path: &str) -> Option<&Located> {
        self.resolve(path).and_then(|p| self.spans.get(&p))
    }

    /// Turns a dotted user path into the canonical indexed path, resolving
    /// element names; `None` if some part does not exist in the file (the last
    /// part may be a field that is absent and takes its default).
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
                if part == k.to_string() || self.text_at(&format!("{elem}.name")) == Some(format!("\"{part}\"")) {
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
        self.spans.get(canon).map(|l| self.text[l.start..l.end].to_string())
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
            .min_by_key(|k| k.len())
            .cloned()
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1];
        let col = self.text.get(start..offset).map_or(1, |s| s.chars().count() + 1);
        (line, col)
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

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    out: &'a mut HashMap<String, Located>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        loop {
            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
            if self.b[self.i.min(self.b.len())..].starts_with(b"//") {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.i += 1;
                }
            } else if self.b[self.i.min(self.b.len())..].starts_with(b"/*") {
                self.i += 2;
                while self.i < self.b.len() && !self.b[self.i..].starts_with(b"*/") {
                    self.i += 1;
                }
                self.i = (self.i + 2).min(self.b.len());
            } else {
                return;
            }
        }
    }

    fn ident(&mut self) -> Option<&str> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
        (self.i > start).then(|| std::str::from_utf8(&self.b[start..self.i]).unwrap_or(""))
    }

    /// Scans one value at `path`, recording its span.
    fn value(&mut self, path: String) {
        let start = self.i;
        match self.peek() {
            None => {}
            Some(b'"') => {
                self.i += 1;
                while let Some(c) = self.peek() {
                    self.i += 1;
                    match c {
                        b'\\' => self.i += 1,
                        b'"' => break,
                        _ => {}
                    }
                }
                self.record(path, start, None);
            }
            Some(b'[') => {
                self.i += 1;
                self.items(&path, b']');
                self.record(path, start, None);
            }
            Some(b'(') => {
                self.i += 1;
                let open = self.i;
                self.items(&path, b')');
                self.record(path, start, Some(open));
            }
            Some(b'{') => {
                self.i += 1;
                self.items(&path, b'}');
                self.record(path, start, None);
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let name = self.ident().unwrap_or("").to_string();
                self.skip_ws();
                if self.peek() == Some(b'(') {
                    if name == "Some" {
                        // Transparent wrapper: the inner value takes the path.
                        self.i += 1;
                        self.skip_ws();
                        self.value(path);
                        self.skip_ws();
                        if self.peek() == Some(b')') {
                            self.i += 1;
                        }
                        return;
                    }
                    self.i += 1;
                    let open = self.i;
                    self.items(&path, b')');
                    self.record(path, start, Some(open));
                } else {
                    self.record(path, start, None);
                }
            }
            Some(_) => {
                // Number or other scalar: up to the next delimiter.
                while self.peek().is_some_and(|c| !matches!(c, b',' | b')' | b']' | b'}') && !c.is_ascii_whitespace()) {
                    self.i += 1;
                }
                self.record(path, start, None);
            }
        }
    }

    fn record(&mut self, path: String, start: usize, open: Option<usize>) {
        self.out.insert(path, Located { start, end: self.i, open });
    }

    /// Items up to `close`: `name: value` (struct fields) or positional values.
    fn items(&mut self, path: &str, close: u8) {
        let mut index = 0;
        loop {
            self.skip_ws();
            match self.peek() {
                None => return,
                Some(c) if c == close => {
                    self.i += 1;
                    return;
                }
                Some(b',') => {
                    self.i += 1;
                    continue;
                }
                _ => {}
            }
            let before = self.i;
            // A field `ident :` — else a positional value.
            let mut field = None;
            if self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
                let save = self.i;
                let name = self.ident().map(str::to_string);
                self.skip_ws();
                if self.peek() == Some(b':') {
                    self.i += 1;
                    field = name;
                } else {
                    self.i = save;
                }
            }
            self.skip_ws();
            let child = match field {
                Some(name) if close != b'}' => join(path, &name),
                _ => format!("{path}[{index}]"),
            };
            self.value(child);
            index += 1;
            if self.i == before {
                self.i += 1; // never stall on text we cannot follow
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
}
