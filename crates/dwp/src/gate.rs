//! What a gate admits (upstream `ledger.py gate` and `signoff` preconditions).
//!
//! A gate run is admitted only for a criterion its task declares, inside a started task
//! attempt, with a command whose class the contract allows; a human sign-off only for a
//! criterion that accepts asserted evidence, by a named authority, bound to the task that owns
//! the criterion. Running the command, resolving the evidence file and writing the records are
//! `dwp-ledger`'s part. Each refusal is the upstream text.

use canonical_json::Value;

use crate::projection;
use crate::py::repr_str;
use crate::refusal::Rule;

/// The command a human sign-off records.
pub const SIGNOFF_COMMAND: &str = "signoff (asserted, not executed)";

/// A gate command as the request gives it: a string (parsed into words here, never handed to
/// a shell) or an argv array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// A JSON string.
    Text(&'a str),
    /// A JSON array of argv.
    Argv(&'a [String]),
}

impl Command<'_> {
    /// The command as upstream records it (argv joined with spaces).
    pub fn joined(&self) -> String {
        match self {
            Command::Text(text) => (*text).to_owned(),
            Command::Argv(argv) => argv.join(" "),
        }
    }
}

/// What a gate admitted: the criterion and the exact argv to execute (no shell in between).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission<'a> {
    /// The criterion the run serves.
    pub criterion: &'a str,
    /// The argv to execute: the program as the allow-list names it, then its arguments.
    pub argv: Vec<String>,
}

/// A refused gate request: the rule it broke and the operator's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The rule.
    pub rule: Rule,
    /// The message (the upstream text where upstream refuses too).
    pub message: String,
}

fn refused(rule: Rule, message: impl Into<String>) -> Refused {
    Refused { rule, message: message.into() }
}

/// The programs that read their `-c` argument as a shell script. A plan that declares one of
/// them as a command class may gate `bash -c '…'`; nothing else is ever read by a shell.
pub const SHELL_CLASSES: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// Characters that make a command shell syntax: control operators (`;`, `&`, `|`, newlines),
/// substitutions (`$`, backticks, parentheses), redirections (`<`, `>`) and comments (`#`).
/// A gate runs one program with its arguments; any of these, quoted or not, is refused outside
/// the `-c` script of a declared shell class (see [`admit`]).
pub const SHELL_SYNTAX: [char; 12] = [';', '&', '|', '<', '>', '$', '`', '(', ')', '\n', '\r', '#'];

/// Admits a gate run of `command` for `criterion` of task `task_id` (`task` is its contract
/// entry; `started`: the task has a `task_start`). Returns the criterion and the argv to run.
///
/// The checks, in order: the criterion is one the task's `gate_intent` declares; the task has
/// started; the contract declares command classes; the program is one of them (upstream's
/// checks and texts so far, except that upstream compares the *basename* of the first word, so
/// `/tmp/x/true` passes for `true`: here a path-qualified program passes only when a class
/// names that exact path); the command parses into words (POSIX shell quoting, by `shlex`) and
/// is no shell syntax ([`SHELL_SYNTAX`]), except in the `-c` script of a declared shell class
/// (`bash -c '…'`; `bash scripts/check.sh` has no script argument and is plain words); and,
/// when the task's `gate_intent` check for the criterion is itself a command of a declared
/// class, the argv is exactly that check's argv. Everything after the task's attempt is
/// [`admit_command`], which the control-pair executor shares.
///
/// # Errors
/// The rule broken and its message.
pub fn admit<'a>(
    contract: &Value,
    task_id: &str,
    task: &Value,
    criterion: Option<&'a str>,
    started: bool,
    command: Command<'_>,
) -> Result<Admission<'a>, Refused> {
    let intents: Vec<String> = projection::intent_criteria(task)
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let Some(criterion) = criterion.filter(|c| !c.is_empty()) else {
        return Err(refused(
            Rule::GateIntent,
            "gate runs require a criterion from the task gate_intent — \"some command exited \
             0\" is not acceptance evidence",
        ));
    };
    if !intents.iter().any(|c| c == criterion) {
        let mut sorted: Vec<String> = intents.iter().map(|c| repr_str(c)).collect();
        sorted.sort();
        return Err(refused(
            Rule::GateIntent,
            format!(
                "criterion {} is not declared in task {} gate_intent [{}] — the linkage cannot \
                 be chosen after the run",
                repr_str(criterion),
                task_id,
                sorted.join(", ")
            ),
        ));
    }
    if !started {
        return Err(refused(
            Rule::TaskWindow,
            format!(
                "gate refused for {task_id}: the task has no task_start — observed evidence is \
                 only recorded inside a task attempt, never before it"
            ),
        ));
    }
    let argv = admit_command(contract, task_id, task, criterion, command, Executor::Gate)?;
    Ok(Admission { criterion, argv })
}

/// Which executor asks for a command's admission: the gate runner or the control-pair executor
/// (`outcomes control`, whose two legs run the same argv). The rules are the same; only the
/// words of the refusal messages differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Executor {
    /// `ledger gate`.
    Gate,
    /// `outcomes control`.
    Control,
}

impl Executor {
    /// The noun a message names the command by (`gate command …`, `control command …`).
    fn noun(self) -> &'static str {
        match self {
            Executor::Gate => "gate",
            Executor::Control => "control",
        }
    }

    /// How a refusal that is not about one command starts.
    fn refused(self) -> &'static str {
        match self {
            Executor::Gate => "gate refused",
            Executor::Control => "control pair refused",
        }
    }

    /// What runs a command without a shell, for the shell-syntax refusal.
    fn runner(self) -> &'static str {
        match self {
            Executor::Gate => "a gate runs",
            Executor::Control => "each control leg runs",
        }
    }

    /// The verb of the advice to use a shell class (`gate bash -c '…'`).
    fn verb(self) -> &'static str {
        match self {
            Executor::Gate => "gate",
            Executor::Control => "run",
        }
    }
}

/// The command half of [`admit`], for an executor that has already checked the criterion and
/// the task's attempt its own way (the control-pair executor checks the criterion's control
/// kind between the two, as upstream does): the contract declares command classes; the program
/// is one of them as written; the command parses into words and is no shell syntax outside a
/// declared shell class's `-c` script; and, when the task's `gate_intent` check for `criterion`
/// is a command of a declared class, the argv is exactly that check's argv. Returns the argv to
/// execute (no shell in between). There is one copy of these rules, and both executors use it.
///
/// # Errors
/// The rule broken and its message (naming the command as `executor`'s).
pub fn admit_command(
    contract: &Value,
    task_id: &str,
    task: &Value,
    criterion: &str,
    command: Command<'_>,
    executor: Executor,
) -> Result<Vec<String>, Refused> {
    let declared = declared_classes(contract);
    if declared.is_empty() {
        return Err(refused(
            Rule::CommandClass,
            format!(
                "{}: contract declared no command classes (empty allowlist is undeclared, not \
                 unrestricted)",
                executor.refused()
            ),
        ));
    }
    let joined = command.joined();
    let head = joined.split_whitespace().next().unwrap_or("").to_owned();
    let mut sorted: Vec<String> = declared.iter().map(|c| repr_str(c)).collect();
    sorted.sort();
    let base = head.rsplit('/').next().unwrap_or(&head);
    if !declared.iter().any(|d| d == base) {
        return Err(refused(
            Rule::CommandClass,
            format!(
                "{} command {} is outside the contract declared command classes [{}]",
                executor.noun(),
                repr_str(&head),
                sorted.join(", ")
            ),
        ));
    }
    let argv = argv_of(command, &declared, executor)?;
    let program = argv.first().map_or("", String::as_str);
    if !declared.iter().any(|d| d == program) {
        return Err(refused(
            Rule::CommandClass,
            format!(
                "{} command program {} is not a declared command class [{}] as written — a \
                 class names a program found on PATH, and a path-qualified program passes only \
                 when a class names that exact path (an executable of one's own named like a \
                 class is never it)",
                executor.noun(),
                repr_str(program),
                sorted.join(", ")
            ),
        ));
    }
    if let Some(check) = declared_check(task, criterion, &declared)
        && check != argv
    {
        return Err(refused(
            Rule::CriterionBinding,
            format!(
                "{} command {} is not the check {} that task {task_id} declares for \
                 {criterion} — a criterion closes only on the command declared for it (amend the \
                 contract to change the check)",
                executor.noun(),
                repr_str(&shown(&argv)),
                repr_str(&shown(&check))
            ),
        ));
    }
    Ok(argv)
}

/// An argv as one line: its words joined with spaces where that reads back as the same words,
/// else POSIX-quoted (`sh -c 'echo a; exit 3'`).
pub fn shown(argv: &[String]) -> String {
    let plain = argv.join(" ");
    if shlex::split(&plain).as_deref() == Some(argv) {
        plain
    } else {
        shlex::try_join(argv.iter().map(String::as_str)).unwrap_or(plain)
    }
}

/// The contract's `scope.allowed_command_classes`.
pub fn declared_classes(contract: &Value) -> Vec<String> {
    contract
        .get("scope")
        .and_then(|sc| sc.get("allowed_command_classes"))
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The argv of `command`, refused when it does not parse or is shell syntax outside a declared
/// shell class's script.
fn argv_of(
    command: Command<'_>,
    declared: &[String],
    executor: Executor,
) -> Result<Vec<String>, Refused> {
    let argv = match command {
        Command::Text(text) => shlex::split(text).filter(|w| !w.is_empty()).ok_or_else(|| {
            refused(
                Rule::ShellSyntax,
                format!(
                    "{} command {} does not parse into words (an unterminated quote or a \
                     trailing backslash) — nothing ran",
                    executor.noun(),
                    repr_str(text)
                ),
            )
        })?,
        Command::Argv(argv) => argv.to_vec(),
    };
    let program = argv.first().map_or("", String::as_str);
    let is_shell = SHELL_CLASSES.contains(&program) && declared.iter().any(|d| d == program);
    let syntax = |w: &str| w.contains(SHELL_SYNTAX);
    let offending = if is_shell {
        // A declared shell reads its `-c` script as shell syntax (and a script file given by
        // name); every other word must be plain, so nothing can follow the script as a second
        // command.
        let script = argv.iter().position(|w| w == "-c").map(|at| at + 1);
        let plain = argv.iter().enumerate().all(|(i, w)| Some(i) == script || !syntax(w));
        // A line break between words is a command separator to a shell but only whitespace to
        // the word splitter, so it would vanish from the argv: a text whose line breaks are
        // not all inside words (quoted) is refused rather than silently re-joined.
        let breaks = |w: &str| w.matches(['\n', '\r']).count();
        let separated = match command {
            Command::Text(text) => breaks(text) > argv.iter().map(|w| breaks(w)).sum::<usize>(),
            Command::Argv(_) => false,
        };
        (!plain || separated).then(|| {
            "a shell class reads only its -c script as shell syntax; every other word must be \
             plain"
                .to_owned()
        })
    } else {
        let raw_syntax = match command {
            Command::Text(text) => syntax(text),
            Command::Argv(argv) => argv.iter().any(|w| syntax(w)),
        };
        raw_syntax.then(|| {
            format!(
                "control operators, substitutions, redirections, comments and newlines are shell \
                 syntax, and {} one program without a shell",
                executor.runner()
            )
        })
    };
    match offending {
        None => Ok(argv),
        Some(why) => {
            let shells: Vec<&str> =
                SHELL_CLASSES.iter().copied().filter(|s| declared.iter().any(|d| d == s)).collect();
            let advice = if shells.is_empty() {
                format!("declare a shell class (e.g. bash) and {} bash -c '…'", executor.verb())
            } else {
                format!("{} {} -c '…'", executor.verb(), shells[0])
            };
            Err(refused(
                Rule::ShellSyntax,
                format!(
                    "{} command {} refused: {why} — {advice}; nothing ran",
                    executor.noun(),
                    repr_str(&command.joined())
                ),
            ))
        }
    }
}

/// The argv of the check `task` declares for `criterion`, when that check is a command of a
/// declared class (a check such as "a human reads it" declares no command and binds nothing).
pub fn declared_check(task: &Value, criterion: &str, declared: &[String]) -> Option<Vec<String>> {
    let check = task
        .get("gate_intent")
        .and_then(Value::as_array)?
        .iter()
        .find(|i| i.get("criterion").and_then(Value::as_str) == Some(criterion))?
        .get("check")
        .and_then(Value::as_str)?;
    let words = shlex::split(check).filter(|w| !w.is_empty())?;
    // A check counts as a command when its program's basename is a class (the contract
    // validator's reading): `/usr/bin/make test` binds too, and only that exact argv closes it.
    let program = words[0].rsplit('/').next().unwrap_or(&words[0]);
    declared.iter().any(|d| d == program).then_some(words)
}

/// The checks of a sign-off before its evidence is resolved: the criterion accepts asserted
/// evidence, the authority is named, an evidence pointer is given. Returns the trimmed
/// authority and the pointer.
///
/// # Errors
/// The upstream refusal text.
pub fn signoff_claim<'a>(
    contract: &Value,
    criterion: &str,
    authority: Option<&str>,
    evidence_path: Option<&'a str>,
) -> Result<(String, &'a str), Refused> {
    let crit = contract
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(criterion)))
        .cloned()
        .ok_or_else(|| {
            refused(
                Rule::UnknownId,
                format!(
                    "signoff refused: {} is not a criterion of this contract",
                    repr_str(criterion)
                ),
            )
        })?;
    let accepted: Vec<&str> = crit
        .get("accepted_evidence")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !accepted.contains(&"asserted") {
        return Err(refused(
            Rule::Signoff,
            format!(
                "signoff refused: {criterion} accepts only {} - a sign-off is asserted evidence \
                 and can never close it; run its gate (ledger.py gate)",
                accepted.join("/")
            ),
        ));
    }
    let authority = authority.unwrap_or("").trim().to_owned();
    if authority.is_empty() || authority.chars().count() > 100 {
        return Err(refused(
            Rule::Signoff,
            "signoff requires --authority: who signs, as a non-empty name (<= 100 chars)",
        ));
    }
    let Some(evidence_path) = evidence_path.filter(|p| !p.is_empty()) else {
        return Err(refused(
            Rule::Signoff,
            "signoff requires --evidence-path: the artifact the sign-off rests on (a review \
             note, an approval record)",
        ));
    };
    Ok((authority, evidence_path))
}

/// The task a sign-off of `criterion` is bound to: `task` if given, else the first task whose
/// `gate_intent` declares the criterion; the task must own the criterion and have started.
///
/// # Errors
/// The upstream refusal text.
pub fn signoff_task(
    contract: &Value,
    events: &[Value],
    criterion: &str,
    task: Option<&str>,
) -> Result<String, Refused> {
    let owners: Vec<String> = contract
        .get("tasks")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter(|t| {
            t.get("gate_intent").and_then(Value::as_array).is_some_and(|gi| {
                gi.iter().any(|i| i.get("criterion").and_then(Value::as_str) == Some(criterion))
            })
        })
        .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if owners.is_empty() {
        return Err(refused(
            Rule::Signoff,
            format!(
                "signoff refused: no task gate_intent declares {criterion} - a sign-off is bound \
                 to the task that owns the criterion (amend the contract to declare it; until \
                 then it closes only by reconciliation with amendment authority)"
            ),
        ));
    }
    let task_id = task.map_or_else(|| owners[0].clone(), str::to_owned);
    if !owners.contains(&task_id) {
        return Err(refused(
            Rule::Signoff,
            format!(
                "signoff refused: {criterion} is declared by {}, not {task_id}",
                owners.join(", ")
            ),
        ));
    }
    if projection::task_start_seq_of(events, &task_id).is_none() {
        return Err(refused(
            Rule::TaskWindow,
            format!(
                "signoff refused: {task_id} has not started - a sign-off counts only inside the \
                 task's evidence window (ledger.py start)"
            ),
        ));
    }
    Ok(task_id)
}
