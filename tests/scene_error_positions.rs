//! Bad numbers are named where they are written. Every number literal of the
//! shipped scenes is replaced, one at a time, by −1, 0, −0.5 and 1e300; the
//! scene is then either accepted (the value is legal there) or refused, and a
//! refusal must point at the line of the replaced number. An error placed
//! elsewhere sends the user to the wrong line: this found a negative radius
//! reported as the body's position, a field region's radius reported at the
//! field's kind and a drop's massless bar reported at the shape list.

use mx2d::scene::Scene;

/// At most this many number literals per scene are mutated.
const SITES: usize = 200;

/// The byte ranges of the number literals of `line` outside its `//` comment
/// (a digit run with an optional sign, fraction and exponent, not part of a
/// name such as `x2`).
fn numbers(line: &str) -> Vec<(usize, usize)> {
    let code = line.split("//").next().unwrap_or("");
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() || (b[i] == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        let glued = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.');
        if !starts || glued {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len()
            && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e' || (b[i] == b'-' && b[i - 1] == b'e'))
        {
            i += 1;
        }
        if !(i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_')) {
            out.push((start, i));
        }
    }
    out
}

#[test]
fn every_refused_number_of_the_shipped_scenes_is_named_on_its_own_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenes/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        // 10⁶ balls built per mutation: minutes; its numbers are of the
        // kinds the other population scenes cover
        .filter(|p| p.file_stem().is_some_and(|s| s != "vortex"))
        .collect();
    paths.sort();
    let (mut refused, mut accepted) = (0, 0);
    let mut misplaced = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("scene");
        let lines: Vec<&str> = text.split('\n').collect();
        // every literal, or an even sample of `SITES` of them: galton's 546
        // generated polylines hold thousands of vertex coordinates, all of
        // one kind (80 s for all of them)
        let sites: Vec<(usize, usize, usize)> = lines
            .iter()
            .enumerate()
            .flat_map(|(li, line)| numbers(line).into_iter().map(move |(a, b)| (li, a, b)))
            .collect();
        let stride = sites.len().div_ceil(SITES).max(1);
        for &(li, a, b) in sites.iter().step_by(stride) {
            let line = lines[li];
            {
                for value in ["-1.0", "0.0", "-0.5", "1e300"] {
                    if &line[a..b] == value {
                        continue;
                    }
                    let mut mutated = lines.clone();
                    let changed = format!("{}{value}{}", &line[..a], &line[b..]);
                    mutated[li] = &changed;
                    match Scene::parse(&mutated.join("\n"), "m.ron") {
                        Ok(_) => accepted += 1,
                        Err(e) => {
                            refused += 1;
                            // One relation of two lines: a spawner outside the
                            // world's explicit bounds is positioned at the
                            // spawner, and its message quotes the bounds — where
                            // the number changed is one of the bounds, that is
                            // its other line.
                            let relation = line.trim_start().starts_with("bounds:")
                                && e.message.contains("outside the world bounds");
                            if e.line != li + 1 && !relation {
                                misplaced.push(format!(
                                    "{}:{}:{} `{}` → {value}: {e}",
                                    path.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
                                    li + 1,
                                    a + 1,
                                    line.trim()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    // the mutation reaches the checks: most such values are refused
    assert!(refused > 500 && accepted > 100, "refused {refused}, accepted {accepted}");
    assert!(misplaced.is_empty(), "{} errors on another line:\n{}", misplaced.len(), misplaced.join("\n"));
}
