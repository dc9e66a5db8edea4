//! `cookwala dry-run --batch FILE` and the catalog × fleet mode (`--recipes DIR --devices DIR`).
//!
//! A batch is NDJSON, one case per line, read as a stream (standard input with `-`): no cap on
//! the whole input, only on one line (64 MiB, the size limit of any document). A case names its
//! documents inline (`recipe`, `capabilities`, `limits`), by file (`recipeFile`,
//! `capabilitiesFile`, `limitsFile`, relative to the batch file's folder) or by id (`recipeId`,
//! `deviceId`, looked up in `--recipes DIR` / `--devices DIR`). Inline members win over the
//! others, so a line written for the inline form reads as it always did.
//!
//! Batches repeat their documents, so nothing is parsed three times: a file or catalog document
//! is parsed once, and an inline object or array of 256 bytes or more that comes a second time
//! is kept (until the cache's budget is spent). A later line reuses the parsed value when its
//! bytes at that place equal a text already parsed (compared in full; a fingerprint of the
//! first 256 bytes only picks the candidates). That is exact: an object or array that parsed is
//! a complete value, so a line holding the same bytes holds the same value there. Anything
//! unusual about a line (a syntax error, a duplicate key, an oversized line) sends it through
//! the plain path, a full parse of the line, whose errors are the ones reported.
//!
//! An inline recipe or capabilities document is checked whole but built only as far as the dry
//! run reads it (see [`Part`]): a batch is mostly documents' text the dry run never looks at.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash, Hasher};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use canonical_json::{
    DEFAULT_MAX_DEPTH, Limits, Map, Value, Wanted, parse_prefix_text, skim_prefix_text,
};
use cookwala::dryrun::{self, LimitIndex, Options, PreparedDevice, PreparedRecipe};
use cookwala::time::Instant;
use cookwala::vocab::Vocabulary;
use rayon::prelude::*;

use crate::clock;
use crate::input::{MAX_INPUT_BYTES, display, read_json};
use crate::output::compact;

/// Limits for a member of a line: the line itself is the first level of nesting.
const MEMBER_LIMITS: Limits =
    Limits { max_depth: DEFAULT_MAX_DEPTH - 1, max_bytes: MAX_INPUT_BYTES };

/// Values shorter than this are parsed each time (cheaper than looking them up).
const FINGERPRINT_LEN: usize = 256;
/// Parsed inline texts kept at most (bytes of source text). The parsed trees take about nine
/// times their text: at 256 MiB, a batch whose every line holds new documents kept 2.4 GB of
/// trees that were never found again (and freeing them cost seconds); 32 MiB keeps ~300 MB.
const CACHE_BUDGET: usize = 32 << 20;
/// Distinct texts kept per fingerprint.
const BUCKET_MAX: usize = 8;
/// Hashes of texts seen once, kept at most (then forgotten all at once): a text is parsed into
/// the cache only when it comes a second time, so a batch of distinct documents keeps nothing
/// (it filled the budget with trees never found again: a third of its time went to faulting in
/// that memory).
const SEEN_MAX: usize = 1 << 16;

/// Documents named by id: `--recipes DIR`, `--devices DIR`.
#[derive(Debug, Default)]
pub struct Catalog {
    /// `(id, document)`, sorted by id.
    docs: Vec<(String, Arc<Value>)>,
}

impl Catalog {
    /// Reads every `*.json` file of `dir`. A document's id is its `id` member when that is a
    /// string, else its file name up to the first dot.
    ///
    /// # Errors
    /// Unreadable folders or files, invalid JSON, two documents with one id.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let mut files = Vec::new();
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let path = entry.with_context(|| format!("cannot list {}", dir.display()))?.path();
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        let mut docs: Vec<(String, Arc<Value>)> = Vec::with_capacity(files.len());
        for path in files {
            let value = read_json(&path)?;
            let id = match value.get("id").and_then(Value::as_str) {
                Some(id) => id.to_owned(),
                None => {
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    let name = name.unwrap_or_default();
                    name.split('.').next().unwrap_or_default().to_owned()
                }
            };
            if docs.iter().any(|(other, _)| *other == id) {
                bail!("{}: two documents have the id {id:?}", dir.display());
            }
            docs.push((id, Arc::new(value)));
        }
        docs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Catalog { docs })
    }

    fn get(&self, id: &str) -> Option<&Arc<Value>> {
        self.docs.binary_search_by(|(k, _)| k.as_str().cmp(id)).ok().map(|i| &self.docs[i].1)
    }
}

/// Where a batch comes from and what its lines may refer to.
#[derive(Debug)]
pub struct Batch<'a> {
    /// The NDJSON file (`-`: standard input).
    pub path: &'a Path,
    /// Recipes by id.
    pub recipes: Option<&'a Catalog>,
    /// Capabilities documents by id.
    pub devices: Option<&'a Catalog>,
    /// Worker threads (the output does not depend on it).
    pub jobs: usize,
}

/// An inline text parsed once.
struct Parsed {
    part: Part,
    text: Box<[u8]>,
    value: Arc<Value>,
}

/// What a member of a line is read as: the recipe and the capabilities document are checked
/// whole but built only as far as the dry run reads them
/// ([`cookwala::dryrun::RECIPE_MEMBERS_READ`], [`cookwala::dryrun::CAPABILITIES_MEMBERS_READ`]):
/// most of a recipe (its dish, ingredients, texts) is never looked at, and building it was
/// most of a batch's time.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Whole,
    Recipe,
    Capabilities,
}

impl Part {
    fn of(key: &str) -> Part {
        match key {
            "recipe" => Part::Recipe,
            "capabilities" => Part::Capabilities,
            _ => Part::Whole,
        }
    }
}

/// Parsed inline objects and arrays, found again by their exact bytes.
struct TextCache {
    buckets: HashMap<u64, Vec<Parsed>>,
    /// Texts of [`FINGERPRINT_LEN`] bytes or more seen once and not kept, by a hash of all
    /// their bytes (a collision only admits a text early).
    seen: HashSet<u64>,
    bytes: usize,
    /// Source bytes kept at most (the run's budget shared out among its workers).
    budget: usize,
    recipe_reads: Wanted,
    capabilities_reads: Wanted,
}

impl TextCache {
    fn new(budget: usize) -> TextCache {
        TextCache {
            buckets: HashMap::new(),
            seen: HashSet::new(),
            bytes: 0,
            budget,
            recipe_reads: Wanted::new(dryrun::RECIPE_MEMBERS_READ),
            capabilities_reads: Wanted::new(dryrun::CAPABILITIES_MEMBERS_READ),
        }
    }

    /// Reads the value at the start of `rest` (no leading whitespace) as `part`:
    /// `(value, length)`, or `None` when it is not valid there.
    fn read(&mut self, rest: &str, part: Part) -> Option<(Arc<Value>, usize)> {
        let bytes = rest.as_bytes();
        let fingerprint = match (bytes.first(), bytes.get(..FINGERPRINT_LEN)) {
            (Some(b'{' | b'['), Some(head)) => {
                let mut hasher = DefaultHasher::new();
                (part, head).hash(&mut hasher);
                Some(hasher.finish())
            }
            _ => None,
        };
        if let Some(bucket) = fingerprint.and_then(|f| self.buckets.get(&f))
            && let Some(hit) = bucket.iter().find(|p| p.part == part && bytes.starts_with(&p.text))
        {
            return Some((Arc::clone(&hit.value), hit.text.len()));
        }
        let reads = match part {
            Part::Whole => None,
            Part::Recipe => Some(&self.recipe_reads),
            Part::Capabilities => Some(&self.capabilities_reads),
        };
        let (value, len) = match reads {
            Some(reads) if bytes.first() == Some(&b'{') => read_members(rest, reads)?,
            _ => parse_prefix_text(rest, MEMBER_LIMITS).ok()?,
        };
        let value = Arc::new(value);
        if let Some(fingerprint) = fingerprint
            && len >= FINGERPRINT_LEN
            && self.bytes + len <= self.budget
            && self.second_sight(bytes.get(..len)?)
        {
            let bucket = self.buckets.entry(fingerprint).or_default();
            if bucket.len() < BUCKET_MAX {
                let text = bytes.get(..len)?.into();
                bucket.push(Parsed { part, text, value: Arc::clone(&value) });
                self.bytes += len;
            }
        }
        Some((value, len))
    }

    /// True when `text` was seen before (it is then worth keeping); otherwise it is noted.
    fn second_sight(&mut self, text: &[u8]) -> bool {
        let hash = foldhash::quality::FixedState::with_seed(0).hash_one(text);
        if self.seen.remove(&hash) {
            return true;
        }
        if self.seen.len() >= SEEN_MAX {
            self.seen.clear();
        }
        self.seen.insert(hash);
        false
    }
}

/// The object at the start of `rest` checked whole (exactly what a full parse accepts), built
/// with only its members named in `reads`: `(object, length)`.
fn read_members(rest: &str, reads: &Wanted) -> Option<(Value, usize)> {
    let mut found = vec![None; reads.names().len()];
    let len = skim_prefix_text(rest, MEMBER_LIMITS, reads, &mut found).ok()?;
    // A member's value sits one level below the object.
    let limits = Limits { max_depth: MEMBER_LIMITS.max_depth - 1, ..MEMBER_LIMITS };
    let mut object = Map::new();
    for (name, raw) in reads.names().iter().zip(found) {
        if let Some(raw) = raw {
            object.insert(name.clone(), canonical_json::parse_with(raw, limits).ok()?);
        }
    }
    Some((Value::Object(object), len))
}

fn skip_ws(line: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = line.get(pos) {
        pos += 1;
    }
    pos
}

/// The members of a line that is a JSON object, read through the cache; `None` when the line
/// is anything else (the plain path then parses it and reports why).
fn members(cache: &mut TextCache, line: &[u8]) -> Option<Vec<(String, Arc<Value>)>> {
    if line.len() > MAX_INPUT_BYTES {
        return None;
    }
    // Checked as UTF-8 once, here, rather than string by string as each member is read.
    let text = simdutf8::basic::from_utf8(line).ok()?;
    let mut pos = skip_ws(line, 0);
    if line.get(pos) != Some(&b'{') {
        return None;
    }
    let mut members: Vec<(String, Arc<Value>)> = Vec::new();
    pos = skip_ws(line, pos + 1);
    if line.get(pos) == Some(&b'}') {
        pos += 1;
    } else {
        loop {
            if line.get(pos) != Some(&b'"') {
                return None;
            }
            let (key, len) = parse_prefix_text(text.get(pos..)?, MEMBER_LIMITS).ok()?;
            let Value::String(key) = key else { return None };
            pos = skip_ws(line, pos + len);
            if line.get(pos) != Some(&b':') {
                return None;
            }
            pos = skip_ws(line, pos + 1);
            let (value, len) = cache.read(text.get(pos..)?, Part::of(&key))?;
            if members.iter().any(|(k, _)| *k == key) {
                return None;
            }
            members.push((key, value));
            pos = skip_ws(line, pos + len);
            match line.get(pos) {
                Some(b',') => pos = skip_ws(line, pos + 1),
                Some(b'}') => {
                    pos += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(line, pos) == line.len()).then_some(members)
}

/// What every worker of a batch run reads.
struct Shared<'a> {
    vocab: &'a Vocabulary,
    batch: &'a Batch<'a>,
    /// The folder `*File` members are relative to.
    base: PathBuf,
    default_limits: Arc<Value>,
}

/// What one worker keeps between the lines it runs: the documents it has parsed. Each worker
/// has its own (no lock is shared on the hot path); a text or file is parsed once per worker.
struct Worker {
    files: HashMap<PathBuf, Arc<Value>>,
    texts: TextCache,
    /// The packs of `files` and the default, indexed for the dry run, by the address of the
    /// document they index (held here too, so the address is not reused while the entry lives).
    /// Emptied past [`MAX_INDEXED_PACKS`].
    indexes: HashMap<usize, (Arc<Value>, Arc<LimitIndex>)>,
}

/// The packs a worker keeps indexed: a batch that uses more, in turn, indexes a pack again when
/// it comes back (each time linear in that pack).
const MAX_INDEXED_PACKS: usize = 64;

impl Worker {
    fn index(&mut self, vocab: &Vocabulary, pack: &Arc<Value>) -> Arc<LimitIndex> {
        let key = Arc::as_ptr(pack) as usize;
        if let Some((_, index)) = self.indexes.get(&key) {
            return Arc::clone(index);
        }
        if self.indexes.len() >= MAX_INDEXED_PACKS {
            self.indexes.clear();
        }
        let index = Arc::new(LimitIndex::new(vocab, pack));
        self.indexes.insert(key, (Arc::clone(pack), Arc::clone(&index)));
        index
    }
}

impl Shared<'_> {
    fn file(&self, worker: &mut Worker, name: &str) -> Result<Arc<Value>> {
        let path = self.base.join(name);
        if let Some(doc) = worker.files.get(&path) {
            return Ok(Arc::clone(doc));
        }
        let doc = Arc::new(read_json(&path)?);
        worker.files.insert(path, Arc::clone(&doc));
        Ok(doc)
    }

    /// A document given inline (`inline`), by file (`file`) or by id (`id` in `catalog`).
    fn document(
        &self,
        worker: &mut Worker,
        get: &dyn Fn(&str) -> Option<Arc<Value>>,
        (inline, file, id): (&str, &str, &str),
        catalog: Option<&Catalog>,
    ) -> Result<Option<Arc<Value>>> {
        if let Some(doc) = get(inline) {
            return Ok(Some(doc));
        }
        if let Some(name) = get(file) {
            let name = name.as_str().with_context(|| format!("{file} is not a string"))?;
            return self.file(worker, name).map(Some);
        }
        if let Some(key) = get(id) {
            let key = key.as_str().with_context(|| format!("{id} is not a string"))?;
            let catalog = catalog.with_context(|| format!("{id} needs the catalog option"))?;
            let doc = catalog.get(key).with_context(|| format!("no document with id {key:?}"))?;
            return Ok(Some(Arc::clone(doc)));
        }
        Ok(None)
    }

    /// One case → its summary (the members come from the cache or from a full parse).
    fn case(&self, worker: &mut Worker, get: &dyn Fn(&str) -> Option<Arc<Value>>) -> Result<Value> {
        let recipes = self.batch.recipes;
        let devices = self.batch.devices;
        let recipe = self
            .document(worker, get, ("recipe", "recipeFile", "recipeId"), recipes)?
            .context("missing recipe")?;
        let caps = self
            .document(worker, get, ("capabilities", "capabilitiesFile", "deviceId"), devices)?
            .context("missing capabilities")?;
        let flag = |k: &str, d: bool| -> Result<bool> {
            match get(k).as_deref() {
                None | Some(Value::Null) => Ok(d),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => bail!("{k} is not a boolean"),
            }
        };
        // As before: no `limits` member means the default pack, `null` means none.
        // An inline pack is indexed with its line (linear in the line); a file's pack or the
        // default is indexed once per worker and kept, as the file's document is.
        let (limits, kept): (Option<Arc<Value>>, bool) = match get("limits") {
            Some(l) if l.is_null() => (None, false),
            Some(l) => (Some(l), false),
            None => match get("limitsFile") {
                Some(name) => {
                    let name = name.as_str().context("limitsFile is not a string")?;
                    (Some(self.file(worker, name)?), true)
                }
                None => (Some(Arc::clone(&self.default_limits)), true),
            },
        };
        let now = match get("now").as_deref() {
            None | Some(Value::Null) => clock::parse_now(None)?,
            Some(Value::String(s)) => clock::parse_now(Some(s))?,
            Some(_) => bail!("now is not a string"),
        };
        let options = Options {
            human_present: flag("humanPresent", false)?,
            allow_model: flag("allowModel", true)?,
            limits: limits.as_deref(),
            now,
        };
        let index = limits.as_ref().map(|pack| match kept {
            true => worker.index(self.vocab, pack),
            false => Arc::new(LimitIndex::new(self.vocab, pack)),
        });
        let result =
            dryrun::dry_run_indexed(self.vocab, &recipe, &caps, options, index.as_deref())?;
        Ok(result.summary())
    }

    /// One line → one result (or an error naming the line).
    fn line(&self, worker: &mut Worker, line: &[u8], number: usize) -> Result<Value> {
        let outcome = match members(&mut worker.texts, line) {
            Some(members) => {
                let get =
                    |k: &str| members.iter().find(|(m, _)| m == k).map(|(_, v)| Arc::clone(v));
                self.case(worker, &get)
            }
            None => {
                // The plain path: the line as one document, with the parser's own error.
                let text = std::str::from_utf8(line).with_context(|| {
                    format!("{}: line {number} is not UTF-8", display(self.batch.path))
                })?;
                match canonical_json::parse(text.as_bytes()).context("not JSON") {
                    Ok(case) => {
                        let get = |k: &str| case.get(k).cloned().map(Arc::new);
                        self.case(worker, &get)
                    }
                    Err(e) => Err(e),
                }
            }
        };
        Ok(outcome.unwrap_or_else(|e| {
            let mut m = Map::new();
            m.insert("error".into(), format!("line {number}: {e:#}").into());
            Value::Object(m)
        }))
    }
}

/// Reads one line (without its `\n` or `\r\n`) into `buf`; `false` at the end of input.
fn next_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    path: &Path,
    number: usize,
) -> Result<bool> {
    buf.clear();
    let limit = MAX_INPUT_BYTES as u64 + 2;
    let n = std::io::Read::take(&mut *reader, limit)
        .read_until(b'\n', buf)
        .with_context(|| format!("cannot read {}", display(path)))?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() as u64 >= limit {
        bail!("{}: line {number} is longer than {MAX_INPUT_BYTES} bytes", display(path));
    }
    Ok(true)
}

/// Case lines read at most into one window (a window runs on the workers while the next one
/// is read).
const WINDOW_LINES: usize = 4096;
/// Bytes of case lines read at most into one window (one line may pass it: a line is at most
/// `MAX_INPUT_BYTES`). At most two windows are held at once: the one running and the one read.
const WINDOW_BYTES: usize = 32 << 20;

/// A line of a window: a case to run, or the error that ends the run at that line (an
/// unreadable, overlong or non-UTF-8 line; only ever the last of its window).
enum Pending {
    Case { number: usize, text: Vec<u8> },
    Fatal(anyhow::Error),
}

/// Reads the next window of lines; `true` with it when the input has ended (or a line ended
/// the run).
fn read_window(reader: &mut dyn BufRead, path: &Path, number: &mut usize) -> (Vec<Pending>, bool) {
    let mut lines = Vec::new();
    let mut bytes = 0;
    while lines.len() < WINDOW_LINES && bytes < WINDOW_BYTES {
        *number += 1;
        let mut buf = Vec::new();
        match next_line(reader, &mut buf, path, *number) {
            Ok(true) => {}
            Ok(false) => return (lines, true),
            Err(e) => {
                lines.push(Pending::Fatal(e));
                return (lines, true);
            }
        }
        match blank(&buf, path, *number) {
            Ok(true) => {}
            Ok(false) => {
                bytes += buf.len();
                lines.push(Pending::Case { number: *number, text: buf });
            }
            Err(e) => {
                lines.push(Pending::Fatal(e));
                return (lines, true);
            }
        }
    }
    (lines, false)
}

/// Runs the cases of a window on the pool's workers; results in input order.
fn run_window(
    pool: &rayon::ThreadPool,
    shared: &Shared<'_>,
    workers: &[Mutex<Worker>],
    lines: &[Pending],
) -> Vec<Result<Value>> {
    pool.install(|| {
        lines
            .par_iter()
            .filter_map(|pending| match pending {
                Pending::Case { number, text } => Some((*number, text)),
                Pending::Fatal(_) => None,
            })
            .map(|(number, text)| {
                // Each pool thread has its own worker, so this lock is never contended.
                let slot = rayon::current_thread_index().unwrap_or(0) % workers.len().max(1);
                let mut worker = workers
                    .get(slot)
                    .context("no batch worker")?
                    .lock()
                    .map_err(|_| anyhow::anyhow!("a batch worker failed"))?;
                shared.line(&mut worker, text, number)
            })
            .collect()
    })
}

/// The pool of a batch or matrix run: `jobs` threads.
pub(crate) fn pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .thread_name(|i| format!("dry-run-{i}"))
        .build()
        .context("cannot start the worker threads")
}

/// `cookwala dry-run --batch FILE`: one result line per case line, in input order.
///
/// The lines stream through a window: while the cases of one window run on `jobs` workers,
/// the next window is read; results are written in input order, so the output is the same bytes
/// for any number of workers. Memory is bounded by two windows, not by the input.
///
/// # Errors
/// Unreadable input, a line that is not UTF-8 or too long, or output that cannot be written
/// (the results of the lines before it are written first, as a single thread would).
pub fn run_batch(vocab: &Vocabulary, batch: &Batch<'_>) -> Result<bool> {
    let mut reader: Box<dyn BufRead> = if batch.path == Path::new("-") {
        Box::new(std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock()))
    } else {
        let file = std::fs::File::open(batch.path)
            .with_context(|| format!("cannot open {}", batch.path.display()))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, file))
    };
    let base = match batch.path.parent() {
        Some(dir) if batch.path != Path::new("-") => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let shared =
        Shared { vocab, batch, base, default_limits: Arc::new(cookwala::limits::default_pack()) };
    let pool = pool(batch.jobs)?;
    let budget = CACHE_BUDGET / pool.current_num_threads().max(1);
    let workers: Vec<Mutex<Worker>> = (0..pool.current_num_threads())
        .map(|_| {
            Mutex::new(Worker {
                files: HashMap::new(),
                texts: TextCache::new(budget),
                indexes: HashMap::new(),
            })
        })
        .collect();
    let mut all_ok = true;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut number = 0;
    let (mut lines, mut ended) = read_window(&mut *reader, batch.path, &mut number);
    loop {
        let (results, next) = std::thread::scope(|scope| {
            let running = scope.spawn(|| run_window(&pool, &shared, &workers, &lines));
            let next = (!ended).then(|| read_window(&mut *reader, batch.path, &mut number));
            (running.join(), next)
        });
        let results = results.map_err(|_| anyhow::anyhow!("a batch worker failed"))?;
        for result in results {
            let value = result?;
            if value.get("state").and_then(Value::as_str) != Some("accepted") {
                all_ok = false;
            }
            if !write_line(&mut out, &value)? {
                return Ok(all_ok);
            }
        }
        if let Some(Pending::Fatal(e)) = lines.pop() {
            let _ = out.flush();
            return Err(e);
        }
        match next {
            Some((window, end)) => (lines, ended) = (window, end),
            None => break,
        }
    }
    finish(out, all_ok)
}

/// A line of whitespace only (as `str::trim` sees it) is skipped; a line that is not UTF-8 is
/// an error, as it always was. A line whose first non-blank byte is `{` needs no check here.
fn blank(line: &[u8], path: &Path, number: usize) -> Result<bool> {
    let first = line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first == Some(&b'{') {
        return Ok(false);
    }
    let text = std::str::from_utf8(line)
        .with_context(|| format!("{}: line {number} is not UTF-8", display(path)))?;
    Ok(text.trim().is_empty())
}

/// Writes one result line; `false` when the reader has gone (`| head`).
fn write_line(out: &mut impl Write, value: &Value) -> Result<bool> {
    match writeln!(out, "{}", compact(value)?) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e).context("cannot write to stdout"),
    }
}

fn finish(mut out: impl Write, all_ok: bool) -> Result<bool> {
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(all_ok),
    }
}

/// Settings of a catalog × fleet run.
#[derive(Debug)]
pub struct Matrix<'a> {
    /// The recipes.
    pub recipes: &'a Catalog,
    /// The devices (capabilities documents).
    pub devices: &'a Catalog,
    /// A person is present.
    pub human_present: bool,
    /// The model rung may be used.
    pub allow_model: bool,
    /// The SafetyLimits pack (`None`: no limits).
    pub limits: Option<&'a Value>,
    /// The instant calibrations are judged at.
    pub now: Instant,
    /// Worker threads (the output does not depend on it).
    pub jobs: usize,
}

/// Recipes run per round of a catalog × fleet run, per worker (a round's lines are held until
/// they are written in order).
const RECIPES_PER_WORKER: usize = 8;

/// `cookwala dry-run --recipes DIR --devices DIR`: every recipe on every device, one line
/// `{"recipe","device",...summary}` per pair (recipes in id order, then devices in id order).
/// Each recipe (with the limits) and each device is prepared once; recipes run on `jobs`
/// workers a round at a time, and each round is written in order (the same bytes for any
/// number of workers).
///
/// # Errors
/// Output that cannot be written.
pub fn run_matrix(vocab: &Vocabulary, matrix: &Matrix<'_>) -> Result<bool> {
    let devices: Vec<(&str, PreparedDevice<'_>)> = matrix
        .devices
        .docs
        .iter()
        .map(|(id, doc)| (id.as_str(), PreparedDevice::new(vocab, doc, matrix.now)))
        .collect();
    // The pack is indexed once for the whole catalog.
    let limits = matrix.limits.map(|pack| LimitIndex::new(vocab, pack));
    let pool = pool(matrix.jobs)?;
    let round = pool.current_num_threads().max(1) * RECIPES_PER_WORKER;
    let mut all_ok = true;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    for recipes in matrix.recipes.docs.chunks(round) {
        let rows: Vec<(Vec<String>, Vec<Map>)> = pool.install(|| {
            recipes
                .par_iter()
                .map(|(recipe_id, recipe)| {
                    recipe_row(vocab, matrix, limits.as_ref(), &devices, recipe_id, recipe)
                })
                .collect()
        });
        for (warnings, lines) in rows {
            for w in warnings {
                eprintln!("{w}");
            }
            for line in lines {
                if line.get("state").and_then(Value::as_str) != Some("accepted") {
                    all_ok = false;
                }
                if !write_line(&mut out, &Value::Object(line))? {
                    return Ok(all_ok);
                }
            }
        }
    }
    finish(out, all_ok)
}

/// One recipe on every device: its warnings and its lines.
fn recipe_row(
    vocab: &Vocabulary,
    matrix: &Matrix<'_>,
    limits: Option<&LimitIndex>,
    devices: &[(&str, PreparedDevice<'_>)],
    recipe_id: &str,
    recipe: &Value,
) -> (Vec<String>, Vec<Map>) {
    let prepared = PreparedRecipe::with_index(vocab, recipe, limits);
    let warnings = prepared
        .as_ref()
        .map(PreparedRecipe::warnings)
        .unwrap_or_default()
        .iter()
        .map(|w| format!("warning: {recipe_id}: {w}"))
        .collect();
    let lines = devices
        .iter()
        .map(|(device_id, device)| {
            let result = prepared.as_ref().map_err(Clone::clone).and_then(|p| {
                dryrun::run_prepared(p, device, matrix.human_present, matrix.allow_model)
            });
            let mut line = match result {
                Ok(run) => match run.summary() {
                    Value::Object(map) => map,
                    _ => Map::new(),
                },
                Err(e) => {
                    let mut m = Map::new();
                    m.insert("error".into(), e.to_string().into());
                    m
                }
            };
            line.insert("recipe".into(), recipe_id.into());
            line.insert("device".into(), (*device_id).into());
            line
        })
        .collect();
    (warnings, lines)
}
