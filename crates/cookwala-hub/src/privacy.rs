//! Anonymity checks for incident reports: no names, ids or contact details of people; and the
//! URL form every error message and log line uses, without a password or a query.

use canonical_json::Value;

/// `url` as an error message or a log line may show it: a password in its authority and its
/// query (where signatures and tokens travel) replaced by `***`.
pub fn redact_url(url: &str) -> String {
    redact_url_with(url, "***")
}

/// [`redact_url`] with `hidden` in place of what is hidden.
///
/// The user information ends at the *last* `@` (a password may hold `/`, `?` or `@`; a path
/// holding `@` is rare, and then too much is hidden, never too little); the host ends at the
/// first `/`, `?` or `#` after it.
pub fn redact_url_with(url: &str, hidden: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (user, after) = match rest.rsplit_once('@') {
        Some((u, a)) => (Some(u), a),
        None => (None, rest),
    };
    let (host, tail) = after.find(['/', '?', '#']).map_or((after, ""), |i| after.split_at(i));
    let user = match user {
        Some(u) => match u.split_once(':') {
            Some((name, _)) => format!("{name}:{hidden}@"),
            None => format!("{u}@"),
        },
        None => String::new(),
    };
    let tail = match tail.split_once(['?', '#']) {
        Some((p, _)) => format!("{p}?{hidden}"),
        None => tail.to_owned(),
    };
    format!("{scheme}://{user}{host}{tail}")
}

/// Top-level fields that would identify a person.
const PERSONAL_FIELDS: &[&str] = &[
    "name",
    "reporter",
    "reportedBy",
    "email",
    "phone",
    "user",
    "userId",
    "person",
    "address",
    "contact",
    "customer",
    "requestedBy",
    "principal",
];

/// The first top-level field that names a person, if any.
pub fn personal_field(doc: &Value) -> Option<&'static str> {
    PERSONAL_FIELDS.iter().copied().find(|f| doc.get(f).is_some())
}

/// What kind of personal data the free text (`description`, `outcome`, `contributingFactors`)
/// contains, if any.
pub fn personal_text(doc: &Value) -> Option<&'static str> {
    let mut texts: Vec<&str> = Vec::new();
    for key in ["description", "outcome"] {
        if let Some(t) = doc.get(key).and_then(Value::as_str) {
            texts.push(t);
        }
    }
    if let Some(items) = doc.get("contributingFactors").and_then(Value::as_array) {
        texts.extend(items.iter().filter_map(Value::as_str));
    }
    texts.into_iter().find_map(classify)
}

fn classify(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    for word in
        lower.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '<' | '>'))
    {
        if let Some((user, domain)) = word.split_once('@')
            && !user.is_empty()
            && domain.contains('.')
        {
            return Some("an email address");
        }
    }
    let mut run = 0;
    for c in lower.chars() {
        if c.is_ascii_digit() {
            run += 1;
            if run >= 7 {
                return Some("a phone number or personal id");
            }
        } else if !matches!(c, ' ' | '-' | '.' | '(' | ')' | '+') {
            run = 0;
        }
    }
    const NAME_CUES: &[&str] = &[
        "my name is",
        "name:",
        "named ",
        "called me",
        "mr. ",
        "mrs. ",
        "ms. ",
        "mr ",
        "mrs ",
        "dr. ",
        "person:",
        "user:",
        "customer id",
        "user id",
        "account id",
        "household:",
    ];
    if NAME_CUES.iter().any(|cue| lower.contains(cue)) {
        return Some("a person's name or id");
    }
    None
}

#[cfg(test)]
mod url_tests {
    use super::redact_url;

    #[test]
    fn a_url_loses_its_password_and_query() {
        assert_eq!(redact_url("http://u:p@h:1/x?sig=s"), "http://u:***@h:1/x?***");
        assert_eq!(redact_url("mqtts://u:p@h"), "mqtts://u:***@h");
        assert_eq!(redact_url("https://h/x"), "https://h/x");
        assert_eq!(redact_url("https://h?t=1"), "https://h?***");
        assert_eq!(redact_url("not a url"), "not a url");
        // A password holding `/`, `?` or `@` is hidden whole.
        assert_eq!(redact_url("mqtt://hub:ab/cd@broker"), "mqtt://hub:***@broker");
        assert_eq!(redact_url("mqtt://hub:ab?cd@broker:1883/"), "mqtt://hub:***@broker:1883/");
        assert_eq!(redact_url("postgres://u:a@b@db/x"), "postgres://u:***@db/x");
        assert_eq!(redact_url("https://h#frag"), "https://h?***");
        assert_eq!(redact_url("mqtt://hub@broker"), "mqtt://hub@broker");
    }
}
