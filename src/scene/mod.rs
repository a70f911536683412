//! Scene files: parsing (RON), validation with positions, `--set` overrides,
//! and building a [`World`](crate::world::World) (`build.rs`).
//!
//! Every error names the file, the line and column, and the field:
//! `scenes/x.ron:12:19: bodies[1].mass: mass must be positive and finite, got -1`.

mod build;
mod locate;
mod schema;

pub use locate::SourceMap;
pub use schema::{
    AnchorDef, BodyDef, ChainDef, ConstraintDef, ContactsDef, LoadDef, MaterialDef, PileDef, SceneFile,
    StabilizationDef,
};

use std::path::Path;

use glam::DVec2;

/// A scene error with its place in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneError {
    /// File name as given.
    pub file: String,
    /// 1-based line; 0 when the error is not in the text (unreadable file,
    /// a bad `--set`).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Path of the offending field (`bodies[1].mass`), empty for syntax errors.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SceneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: ", self.file)?,
            line => write!(f, "{}:{line}:{}: ", self.file, self.column)?,
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SceneError {}

/// A parsed and validated scene, with the text it came from.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The scene's content.
    pub file: SceneFile,
    /// Where it came from (for messages).
    pub path: String,
    /// The (possibly overridden) text.
    pub text: String,
}

/// The largest scene file read (bytes): far above any hand-written or
/// generated scene (large populations are described by generators).
pub const MAX_SCENE_BYTES: u64 = 16 << 20;

/// The largest magnitude of any number in a scene: squares and products of
/// three such numbers stay finite (1e100³ = 1e300), so energies do too.
pub const MAX_MAGNITUDE: f64 = 1e100;

/// How far from the origin a body may be, in units of the largest body's
/// radius: at 1e12 radii an f64 position still resolves 1e-4 of a radius.
pub const MAX_EXTENT_RATIO: f64 = 1e12;

/// The message for a body at `position` farther than [`MAX_EXTENT_RATIO`] ×
/// `largest` (the largest body radius) from the origin; `None` within it.
/// The rule of listed bodies and of the generators' (`build.rs`).
pub(crate) fn beyond_extent(position: glam::DVec2, largest: f64) -> Option<String> {
    let r = position.length();
    (r > MAX_EXTENT_RATIO * largest).then(|| {
        format!(
            "{r:e} from the origin is more than {MAX_EXTENT_RATIO:e} × the largest body radius ({largest:e}): f64 cannot resolve the bodies there"
        )
    })
}

/// The most steps one run may take (a scene's `steps`, `duration / dt`, or
/// the command line's): 10⁹ steps is hours of the smallest scene; a larger
/// count is a typo or a saturated conversion, and would never end.
pub const MAX_STEPS: u64 = 1_000_000_000;

/// The most PGS sweeps a step of the exact contact path may ask for
/// (`contacts.iterations`; the default is 100, the 100-row pyramid needs
/// about 1,000).
pub const MAX_CONTACT_ITERATIONS: usize = 100_000;

/// The most alternations of the contact PGS and the joints' velocity
/// projection (`contacts.joint_passes`; default 4).
pub const MAX_JOINT_PASSES: usize = 1_000;

/// Memory of one generated body with its joint, the solver's blocks and the
/// integrator's state, measured as the peak RSS of `mx2d run` on chains of 1e5
/// and 4e5 links with RK4 (2.07 kB per link), rounded up.
const BYTES_PER_BODY: u64 = 2200;

/// Memory of one body of a contact generator (`piles`, `drops`) once it
/// rests among others: its contact points, their warm-start entries, the PGS
/// blocks and the cached outline. Measured as the peak RSS of `mx2d run
/// scenes/pyramid.ron` at 100 and 200 rows (5,050 and 20,100 boxes: 6.5 kB
/// per box), rounded up.
const BYTES_PER_CONTACT_BODY: u64 = 8000;

/// Most bodies a scene may have: constraint ids are u32 (2³² − 2).
const MAX_BODIES: u64 = u32::MAX as u64 - 1;

/// How much memory a scene may use, and where that figure came from.
struct AvailableMemory {
    bytes: u64,
    source: &'static str,
}

/// `MemAvailable` of /proc/meminfo; where that cannot be read, 16 GiB.
fn available_memory() -> AvailableMemory {
    let from_proc = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb.saturating_mul(1024))
    });
    match from_proc {
        Some(bytes) => AvailableMemory { bytes, source: "available on this machine (MemAvailable)" },
        None => AvailableMemory { bytes: 16 << 30, source: "assumed available (memory size unknown here)" },
    }
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

impl Scene {
    /// Reads, applies `overrides` (`PATH=VALUE`), parses and validates a file.
    /// The file must be UTF-8 (a leading byte-order mark is accepted); bytes
    /// that are not are reported at their line and column.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scene, SceneError> {
        let name = path.display().to_string();
        let unplaced =
            |message: String| SceneError { file: name.clone(), line: 0, column: 0, field: String::new(), message };
        let metadata = std::fs::metadata(path).map_err(|e| unplaced(format!("cannot read the scene file: {e}")))?;
        if metadata.is_dir() {
            return Err(unplaced("cannot read the scene file: it is a directory".into()));
        }
        // Checked before reading: a scene is text written by hand or by a
        // script, never this large (see docs, "Limits").
        if metadata.is_file() && metadata.len() > MAX_SCENE_BYTES {
            return Err(unplaced(format!(
                "the scene file has {} bytes, more than the limit of {MAX_SCENE_BYTES}",
                metadata.len()
            )));
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(
                std::fs::File::open(path).map_err(|e| unplaced(format!("cannot read the scene file: {e}")))?,
                MAX_SCENE_BYTES + 1,
            ),
            &mut bytes,
        )
        .map_err(|e| unplaced(format!("cannot read the scene file: {e}")))?;
        if bytes.len() as u64 > MAX_SCENE_BYTES {
            return Err(unplaced(format!("the scene file is longer than the limit of {MAX_SCENE_BYTES} bytes")));
        }
        Scene::from_bytes(bytes, &name, overrides)
    }

    /// Checks that `bytes` are UTF-8 (invalid bytes are reported at their
    /// line and column), then parses them as [`Scene::parse_with_overrides`].
    pub fn from_bytes(bytes: Vec<u8>, name: &str, overrides: &[String]) -> Result<Scene, SceneError> {
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let good = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
            let (line, column) = locate::line_col_of(good, valid);
            SceneError {
                file: name.to_string(),
                line,
                column,
                field: String::new(),
                message: format!("the file is not valid UTF-8 (byte 0x{:02X})", bytes[valid]),
            }
        })?;
        Scene::parse_with_overrides(&text, name, overrides)
    }

    /// Parses and validates scene text (`name` is used in messages).
    pub fn parse(text: &str, name: &str) -> Result<Scene, SceneError> {
        Scene::parse_with_overrides(text, name, &[])
    }

    /// Parses `text` (so that the file's own errors come first, at their
    /// place), applies the overrides in order, then parses and validates the
    /// result. An error an override causes is reported against the override
    /// (`FILE: --set PATH=VALUE: message`).
    pub fn parse_with_overrides(text: &str, name: &str, overrides: &[String]) -> Result<Scene, SceneError> {
        // A UTF-8 byte-order mark is not part of the RON text.
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        let parsed: Result<SceneFile, _> = ron_options().from_str(text);
        let mut file = parsed.map_err(|e| syntax_error(name, text, e))?;
        let mut text = text.to_string();
        for o in overrides {
            let set_error = |message: String| SceneError {
                file: name.to_string(),
                line: 0,
                column: 0,
                field: format!("--set {o}"),
                message,
            };
            text = apply_override(&text, o).map_err(set_error)?;
            file = ron_options().from_str(&text).map_err(|e| set_error(e.code.to_string()))?;
        }
        let scene = Scene { file, path: name.to_string(), text };
        scene.validate()?;
        Ok(scene)
    }

    /// An error at `field` (a canonical path), positioned from the text.
    pub fn error_at(&self, field: &str, message: impl Into<String>) -> SceneError {
        let map = SourceMap::new(&self.text);
        let message = message.into();
        // "radius must be …" under `shape`: point at `shape.radius` if present.
        let word = message.split_whitespace().next().unwrap_or("");
        let refined = format!("{field}.{word}");
        let field = if map.contains(&refined) { refined } else { field.to_string() };
        let (line, column) = map.position_of(&field).unwrap_or((1, 1));
        SceneError { file: self.path.clone(), line, column, field, message }
    }

    /// Every number in the scene must be a normal float (or zero) of sane
    /// size: a subnormal (1e-320) passes "positive and finite" but its
    /// inverse is infinite (`mass`) or a run with it never ends (`dt`); a
    /// magnitude past [`MAX_MAGNITUDE`] overflows the energy (m g y with y =
    /// 1e308 is infinite). Body positions must also lie within
    /// [`MAX_EXTENT_RATIO`] × the largest body's radius of the origin, past
    /// which f64 can no longer resolve the bodies themselves.
    fn check_numbers(&self) -> Result<(), SceneError> {
        fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<(String, f64)>) {
            match v {
                serde_json::Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
                    out.push((path.to_string(), n.as_f64().unwrap_or(0.0)));
                }
                serde_json::Value::Array(items) => {
                    for (k, item) in items.iter().enumerate() {
                        walk(item, &format!("{path}[{k}]"), out);
                    }
                }
                serde_json::Value::Object(fields) => {
                    // An enum variant `{"Circle": {...}}`: the tag is not a path part.
                    let tag = fields.len() == 1 && fields.keys().all(|k| k.starts_with(|c: char| c.is_uppercase()));
                    for (name, field) in fields {
                        let child = match (tag, path.is_empty()) {
                            (true, _) => path.to_string(),
                            (false, true) => name.clone(),
                            (false, false) => format!("{path}.{name}"),
                        };
                        walk(field, &child, out);
                    }
                }
                _ => {}
            }
        }
        let Ok(value) = serde_json::to_value(&self.file) else { return Ok(()) };
        let mut numbers = Vec::new();
        walk(&value, "", &mut numbers);
        for (path, v) in numbers {
            if v != 0.0 && v.is_finite() && !v.is_normal() {
                return Err(self.error_at(
                    &path,
                    format!(
                        "{v:e} is subnormal, too small to compute with (the smallest normal float is {:e})",
                        f64::MIN_POSITIVE
                    ),
                ));
            }
            if v.abs() > MAX_MAGNITUDE {
                return Err(
                    self.error_at(&path, format!("{v:e} is beyond the largest magnitude accepted, {MAX_MAGNITUDE:e}"))
                );
            }
        }
        // An invalid shape (a negative radius) is named at its own field by
        // the body checks; its bounding radius means nothing here (a scene
        // whose one ball had radius −1 was told its position was too far out).
        if self.file.bodies.iter().any(|b| b.shape.validate().is_err()) {
            return Ok(());
        }
        let largest = self.file.bodies.iter().map(|b| b.shape.bounding_radius()).fold(0.0, f64::max);
        for (i, b) in self.file.bodies.iter().enumerate() {
            if let Some(m) = beyond_extent(b.position, largest) {
                return Err(self.error_at(&format!("bodies[{i}].position"), m));
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), SceneError> {
        self.build_world().map(|_| ())
    }

    /// Refuses, before anything is allocated, a scene whose generators ask for
    /// more bodies than this machine's memory can hold (issue 10: `links:
    /// 100000000` used to abort after 44 s at 6.7 GB, `4294967296` hung).
    fn check_size(&self) -> Result<(), SceneError> {
        let available = available_memory();
        let mut total: u128 = self.file.bodies.len() as u128 * BYTES_PER_BODY as u128;
        for (i, c) in self.file.chains.iter().enumerate() {
            let need = c.links as u128 * BYTES_PER_BODY as u128;
            total += need;
            if c.links as u128 > MAX_BODIES as u128 || total > available.bytes as u128 {
                let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
                return Err(self.error_at(
                    &format!("chains[{i}].links"),
                    format!(
                        "links {}: the scene would need about {:.1} GiB ({} bytes per link with its joint, solver and integrator state; at most {} bodies), more than the {:.1} GiB {}",
                        c.links,
                        gib(total),
                        BYTES_PER_BODY,
                        MAX_BODIES,
                        gib(available.bytes as u128),
                        available.source
                    ),
                ));
            }
        }
        // Contact generators: a pile of n rows has n(n + 1)/2 boxes (a
        // pyramid) or n (a column); a drop has `count` bodies.
        let piles = self.file.piles.iter().enumerate().map(|(i, p)| {
            let rows = p.rows as u128;
            (format!("piles[{i}].rows"), "rows", p.rows, if p.pyramid { rows * (rows + 1) / 2 } else { rows })
        });
        let drops = self
            .file
            .drops
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("drops[{i}].count"), "count", d.count, d.count as u128));
        let mut bodies =
            self.file.bodies.len() as u128 + self.file.chains.iter().map(|c| c.links as u128).sum::<u128>();
        for (path, field, value, count) in piles.chain(drops) {
            total += count * BYTES_PER_CONTACT_BODY as u128;
            bodies += count;
            if bodies > MAX_BODIES as u128 || total > available.bytes as u128 {
                let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
                return Err(self.error_at(
                    &path,
                    format!(
                        "{field} {value}: the scene would need about {:.1} GiB ({count} bodies; {} bytes per body with its contacts; at most {} bodies), more than the {:.1} GiB {}",
                        gib(total),
                        BYTES_PER_CONTACT_BODY,
                        MAX_BODIES,
                        gib(available.bytes as u128),
                        available.source
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The default number of steps: `steps`, else `duration / dt` (default 1 s).
    pub fn default_steps(&self) -> u64 {
        self.file.steps.unwrap_or_else(|| (self.file.duration.unwrap_or(1.0) / self.file.dt).round() as u64)
    }
}

/// Every number a constraint definition holds, by field, for the finiteness check.
fn constraint_numbers(c: &ConstraintDef) -> Vec<(&'static str, Vec<f64>)> {
    let v2 = |v: &DVec2| vec![v.x, v.y];
    let opt2 = |v: &Option<DVec2>| v.as_ref().map(v2).unwrap_or_default();
    let drive = |d: &crate::constraint::Drive| match *d {
        crate::constraint::Drive::Speed { speed } => vec![speed],
        crate::constraint::Drive::Oscillate { amplitude, frequency, phase } => vec![amplitude, frequency, phase],
    };
    match c {
        ConstraintDef::Revolute { at, anchor_a, anchor_b, .. } => {
            vec![("at", opt2(at)), ("anchor_a", opt2(anchor_a)), ("anchor_b", opt2(anchor_b))]
        }
        ConstraintDef::Distance { anchor_a, anchor_b, length, .. } => {
            vec![("anchor_a", v2(anchor_a)), ("anchor_b", v2(anchor_b)), ("length", length.iter().copied().collect())]
        }
        ConstraintDef::Prismatic { axis, .. } => vec![("axis", v2(axis))],
        ConstraintDef::Weld { at, .. } => vec![("at", opt2(at))],
        ConstraintDef::Angle { angle, .. } => vec![("angle", angle.iter().copied().collect())],
        ConstraintDef::Gear { ratio, .. } => vec![("ratio", vec![*ratio])],
        ConstraintDef::Motor { drive: d, .. } => vec![("drive", drive(d))],
        ConstraintDef::Rolling { .. } => vec![],
        ConstraintDef::PointOnCurve { point, .. } => vec![("point", v2(point))],
    }
}

fn syntax_error(file: &str, text: &str, e: ron::error::SpannedError) -> SceneError {
    // Name the field: the parser names it for a field that is unknown,
    // missing or repeated (its struct's path is added); for a value of the
    // wrong type or out of range (`dt: "fast"`, `count: -5`) the source map
    // gives the path of the value at the error's position.
    let map = SourceMap::new(text);
    let at = map.path_at(map.offset_of(e.span.start.line, e.span.start.col));
    let named = match &e.code {
        ron::Error::NoSuchStructField { found, .. } => Some(found.clone()),
        ron::Error::MissingStructField { field, .. } => Some(field.to_string()),
        ron::Error::DuplicateStructField { field, .. } => Some(field.to_string()),
        _ => None,
    };
    let field = match (named, at) {
        (Some(name), Some(path)) if path == name || path.ends_with(&format!(".{name}")) => path,
        (Some(name), Some(path)) => format!("{path}.{name}"),
        (Some(name), None) => name,
        (None, at) => at.unwrap_or_default(),
    };
    SceneError {
        file: file.to_string(),
        line: e.span.start.line,
        column: e.span.start.col,
        field,
        message: e.code.to_string(),
    }
}

/// `x` as `{}` prints it where that is short, else in exponent form: f64's
/// `Display` never uses an exponent, so a value such as `1e-300` or `1e50`
/// in an error message was hundreds of digits long.
pub(crate) fn readable(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs()) { format!("{x}") } else { format!("{x:e}") }
}

/// A vector's components as [`readable`] shows them, `(x, y)`.
pub(crate) fn readable_vec(v: glam::DVec2) -> String {
    format!("({}, {})", readable(v.x), readable(v.y))
}

/// The grammar of a `--set` PATH: parts separated by `.`, or indices in
/// brackets (`bodies[1].position[0]`); no part empty, brackets paired. The
/// path scanner drops empty parts, so `dt.` used to set `dt`, and `.` or `..`
/// the whole scene.
fn check_path_syntax(path: &str) -> Result<(), String> {
    let mut rest = path;
    let mut first = true;
    while !rest.is_empty() {
        let (part, after) = if let Some(inner) = rest.strip_prefix('[').filter(|_| !first) {
            let close = inner.find(']').ok_or("a '[' without its ']'")?;
            (&inner[..close], &inner[close + 1..])
        } else {
            let body = if first { rest } else { rest.strip_prefix('.').ok_or("expected '.' or '[' between parts")? };
            let end = body.find(['.', '[', ']']).unwrap_or(body.len());
            if body[end..].starts_with(']') {
                return Err("a ']' without its '['".into());
            }
            (&body[..end], &body[end..])
        };
        if part.is_empty() {
            return Err("a part of the path is empty".into());
        }
        if part.contains(['.', '[']) {
            return Err(format!("the index '{part}' holds a '.' or '['"));
        }
        rest = after;
        first = false;
    }
    Ok(())
}

/// Rewrites `text` so that the value at PATH becomes VALUE (`PATH=VALUE`).
/// An absent field of an existing struct is inserted; anything else that does
/// not exist is an error naming the path. VALUE must be exactly one RON value
/// (no comments, nothing after it), so it can never change its surroundings.
pub fn apply_override(text: &str, assignment: &str) -> Result<String, String> {
    let (path, value) =
        assignment.split_once('=').ok_or_else(|| format!("--set expects PATH=VALUE, got '{assignment}'"))?;
    let (path, value) = (path.trim(), value.trim());
    if path.is_empty() {
        return Err("--set expects PATH=VALUE: the path is empty".into());
    }
    check_path_syntax(path).map_err(|m| format!("bad path '{path}': {m}"))?;
    SourceMap::check_single_value(value).map_err(|m| format!("bad value '{value}': {m}"))?;
    let map = SourceMap::new(text);
    if let Some(e) = map.error() {
        let (line, column) = map.line_col(e.offset);
        return Err(format!("cannot apply to this text ({}: at {line}:{column})", e.message));
    }
    let canon = map.resolve(path).ok_or_else(|| format!("unknown path '{path}'"))?;
    if let Some(l) = map.span(&canon) {
        return Ok(format!("{}{}{}", &text[..l.start], value, &text[l.end..]));
    }
    // Insert a missing field into its parent struct.
    let (parent, field) = match canon.rfind('.') {
        Some(cut) => (&canon[..cut], &canon[cut + 1..]),
        None => ("", canon.as_str()),
    };
    let parent_span = map.span(parent).ok_or_else(|| format!("unknown path '{path}'"))?;
    let open = parent_span.open.ok_or_else(|| format!("unknown path '{path}': '{parent}' is not a structure"))?;
    if field.is_empty() || !field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("unknown path '{path}'"));
    }
    let inserted = format!("{}{field}: {value}, {}", &text[..open], &text[open..]);
    // The parser decides whether the field exists in the schema; say so clearly.
    match ron_options().from_str::<SceneFile>(&inserted) {
        Err(e) if matches!(e.code, ron::Error::NoSuchStructField { .. }) => Err(format!("unknown path '{path}'")),
        _ => Ok(inserted),
    }
}
