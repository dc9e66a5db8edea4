//! Bearer tokens with roles.
//!
//! A tokens file is a JSON object `{"tokens": [entry, …]}`; each entry has a `name`, a `role`
//! and either the token itself (`token`) or the lowercase hex SHA-256 of it (`sha256`), and an
//! agent entry names the agent it speaks for (`agent`, e.g. `agent:planner-1`):
//!
//! ```json
//! {"tokens": [
//!   {"name": "owner", "role": "owner", "token": "3f9c…"},
//!   {"name": "kitchen tablet", "role": "cook", "sha256": "5e88…"},
//!   {"name": "meal planner", "role": "agent", "agent": "agent:planner-1", "sha256": "a1b2…"},
//!   {"name": "dashboard", "role": "viewer", "sha256": "c3d4…"}
//! ]}
//! ```
//!
//! | role | may |
//! |---|---|
//! | `owner` | everything, including publishing recalls |
//! | `cook` | start, resume and read executions; use the tools |
//! | `agent` | the same as `cook`, but only as its own agent: `requestedBy` must be the entry's `agent`, and every start needs an AgentMandate whose principal signature verifies against the hub's trusted keys |
//! | `viewer` | read executions, logs, events and tools |
//!
//! Open to everyone: capabilities, safety limits, recalls (reading), incidents, stop, the
//! well-known keys and the API description. Tokens are compared through their SHA-256, so the
//! comparison takes the same time whatever the presented token is.

use canonical_json::digest::sha256_hex;
use canonical_json::{Map, Value};

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads only.
    Viewer,
    /// Speaks for one agent, under a verified mandate.
    Agent,
    /// Starts and resumes executions.
    Cook,
    /// Everything.
    Owner,
}

impl Role {
    /// The name used in tokens files.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Agent => "agent",
            Role::Cook => "cook",
            Role::Owner => "owner",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Role> {
        Some(match text {
            "viewer" => Role::Viewer,
            "agent" => Role::Agent,
            "cook" => Role::Cook,
            "owner" => Role::Owner,
            _ => return None,
        })
    }

    /// Whether this role may perform `action`.
    pub fn allows(self, action: Action) -> bool {
        match action {
            Action::Read => true,
            Action::Cook => self != Role::Viewer,
            Action::Admin => self == Role::Owner,
        }
    }
}

/// What a request wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read executions, logs, events; use the tools.
    Read,
    /// Start or resume an execution.
    Cook,
    /// Change the hub's catalog (publish a recall).
    Admin,
}

/// One accepted token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenEntry {
    /// A label for people (shown in logs, never the token).
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The agent an `agent` token speaks for.
    pub agent: Option<String>,
    /// Lowercase hex SHA-256 of the token.
    sha256: String,
}

impl TokenEntry {
    /// The principal this entry authenticates.
    pub fn principal(&self) -> Principal {
        Principal {
            name: self.name.clone(),
            role: self.role,
            agent: self.agent.clone(),
            scope: self.sha256.get(..16).unwrap_or(&self.sha256).to_owned(),
        }
    }

    /// An entry for the token `token`.
    pub fn new(name: &str, role: Role, token: &str, agent: Option<&str>) -> TokenEntry {
        TokenEntry {
            name: name.to_owned(),
            role,
            agent: agent.map(str::to_owned),
            sha256: sha256_hex(token.as_bytes()),
        }
    }
}

/// Who made a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The token's label (`anonymous` when auth is off).
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The agent it speaks for, for `agent` tokens.
    pub agent: Option<String>,
    /// What its idempotency keys are scoped to: a prefix of its token's digest (`open` for
    /// callers without a token), so two principals never share an answer.
    pub scope: String,
}

impl Principal {
    /// The caller of an open endpoint, or of any endpoint under `--no-auth`.
    pub fn anonymous(role: Role) -> Principal {
        Principal { name: "anonymous".into(), role, agent: None, scope: "open".into() }
    }

    /// True for the roles of a person (`owner`, `cook`): only a person confirms a human step
    /// or says a person is present.
    pub fn is_person(&self) -> bool {
        matches!(self.role, Role::Owner | Role::Cook)
    }

    /// `role:name`, how the execution log names who confirmed a human step.
    pub fn label(&self) -> String {
        format!("{}:{}", self.role.as_str(), self.name)
    }

    /// An idempotency key as stored: scoped to this principal.
    pub fn scoped_key(&self, key: &str) -> String {
        format!("{}/{key}", self.scope)
    }
}

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokensError {
    /// The document is not `{"tokens": [...]}`.
    #[error("a tokens file is a JSON object with a \"tokens\" array")]
    Shape,
    /// An entry is malformed.
    #[error("tokens[{index}]: {why}")]
    Entry {
        /// Position in the array.
        index: usize,
        /// What is wrong.
        why: String,
    },
}

/// The tokens a hub accepts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

/// The shortest token a tokens file may hold, in non-space characters.
pub const MIN_TOKEN_LEN: usize = 16;

/// True for a token of at least [`MIN_TOKEN_LEN`] non-space characters with no space at
/// either end (a client's `Authorization` header loses those, so such a token could never be
/// presented). Sixteen spaces are not a secret.
pub fn acceptable_token(token: &str) -> bool {
    token.trim() == token && token.chars().filter(|c| !c.is_whitespace()).count() >= MIN_TOKEN_LEN
}

impl Tokens {
    /// No tokens.
    pub fn new() -> Tokens {
        Tokens::default()
    }

    /// One owner token (tests, and `--token` on top of a tokens file).
    pub fn owner(token: &str) -> Tokens {
        let mut t = Tokens::new();
        t.push(TokenEntry::new("owner", Role::Owner, token, None));
        t
    }

    /// Adds an entry.
    pub fn push(&mut self, entry: TokenEntry) {
        self.entries.push(entry);
    }

    /// True when no token is accepted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries.
    pub fn entries(&self) -> &[TokenEntry] {
        &self.entries
    }

    /// Reads a tokens document.
    ///
    /// # Errors
    /// The shape is wrong, a role is unknown, a token is shorter than [`MIN_TOKEN_LEN`], a
    /// digest is not 64 hex digits, an agent entry names no agent, or two entries share a
    /// token.
    pub fn parse(doc: &Value) -> Result<Tokens, TokensError> {
        let list = doc.get("tokens").and_then(Value::as_array).ok_or(TokensError::Shape)?;
        let mut out = Tokens::new();
        for (index, e) in list.iter().enumerate() {
            let bad = |why: &str| TokensError::Entry { index, why: why.to_owned() };
            let m = e.as_object().ok_or_else(|| bad("not an object"))?;
            for key in m.keys() {
                if !matches!(key.as_str(), "name" | "role" | "token" | "sha256" | "agent")
                    && !key.starts_with("x-")
                {
                    return Err(bad(&format!("unknown field {key:?}")));
                }
            }
            let name = e.get("name").and_then(Value::as_str).unwrap_or("unnamed").to_owned();
            let role_text = e.get("role").and_then(Value::as_str).ok_or_else(|| bad("no role"))?;
            let role = Role::parse(role_text).ok_or_else(|| {
                bad(&format!("role {role_text:?} is not one of owner, cook, agent, viewer"))
            })?;
            let sha256 = match (e.get("token"), e.get("sha256")) {
                (Some(Value::String(t)), None) => {
                    if !acceptable_token(t) {
                        return Err(bad(&format!(
                            "token shorter than {MIN_TOKEN_LEN} non-space characters, or with a \
                             space at either end"
                        )));
                    }
                    sha256_hex(t.as_bytes())
                }
                (None, Some(Value::String(h))) => {
                    if h.len() != 64 || !h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                        return Err(bad("sha256 must be 64 lowercase hex digits"));
                    }
                    h.clone()
                }
                _ => return Err(bad("give exactly one of token (a string) or sha256")),
            };
            let agent = match e.get("agent") {
                None => None,
                Some(Value::String(a)) if !a.is_empty() => Some(a.clone()),
                Some(_) => return Err(bad("agent must be a non-empty string")),
            };
            // The `agent:` prefix is what makes the prechecks demand a mandate for every
            // request an agent token sends.
            if role == Role::Agent && !agent.as_deref().is_some_and(|a| a.starts_with("agent:")) {
                return Err(bad("an agent token names its agent (\"agent\": \"agent:<name>\")"));
            }
            if out.entries.iter().any(|x| x.sha256 == sha256) {
                return Err(bad("the same token appears twice"));
            }
            out.entries.push(TokenEntry { name, role, agent, sha256 });
        }
        Ok(out)
    }

    /// A tokens document holding `token` in clear as the one owner token (what `cookwala
    /// serve` writes on first start).
    pub fn owner_document(token: &str) -> Value {
        let mut e = Map::new();
        e.insert("name".into(), "owner".into());
        e.insert("role".into(), "owner".into());
        e.insert("token".into(), token.into());
        let mut m = Map::new();
        m.insert("tokens".into(), Value::Array(vec![Value::Object(e)]));
        Value::Object(m)
    }

    /// The entry for a presented token.
    pub fn find(&self, presented: &str) -> Option<&TokenEntry> {
        let digest = sha256_hex(presented.as_bytes());
        // Compare digests in constant time and look at every entry, so neither the position
        // nor a shared prefix shows in the timing.
        let mut found = None;
        for e in &self.entries {
            if constant_time_eq(e.sha256.as_bytes(), digest.as_bytes()) {
                found = Some(e);
            }
        }
        found
    }
}

/// Byte equality whose time depends only on the lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token a coordinating hub presents to the kitchen's devices (`serve --device-token`):
/// `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceToken(String);

impl DeviceToken {
    /// Wraps a token.
    pub fn new(token: &str) -> DeviceToken {
        DeviceToken(token.to_owned())
    }

    /// The token, for the `Authorization` header of a request to a device.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for DeviceToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceToken(<redacted>)")
    }
}
