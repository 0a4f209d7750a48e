//! Command lines as a shell reads them back: the suite's one rule for
//! quoting (a report's command to reproduce a run, ssh's remote command).
//! Words are split with shlex; quoting stays this rule, which leaves a
//! list such as `1,10` bare where shlex would quote it, so that every
//! committed report's command reads as it always has.

/// `words` joined by spaces, each one a shell would split or expand (a
/// configuration's braces, a space) in single quotes.
pub fn shell_words<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words.map(quoted).collect::<Vec<_>>().join(" ")
}

fn quoted(word: &str) -> String {
    const SPECIAL: &str = " \t\n'\"\\$`*?[]{}()<>|&;!#~";
    if !word.is_empty() && !word.contains(|c| SPECIAL.contains(c)) {
        return word.into();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_a_shell_would_change_is_quoted() {
        let words = [
            "run",
            "--connections",
            "1,10",
            "--runtimes",
            "tokio,tokio{a=1,b=2}",
        ];
        assert_eq!(
            shell_words(words.into_iter()),
            "run --connections 1,10 --runtimes 'tokio,tokio{a=1,b=2}'"
        );
        assert_eq!(shell_words(["it's", ""].into_iter()), r"'it'\''s' ''");
    }
}
