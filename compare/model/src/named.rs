//! Choices the command line takes by name, such as output formats.

/// A set of choices, each with its name.
pub trait Named: Sized + Copy + 'static {
    /// Every choice, in the order of `NAMES`.
    const ALL: &'static [Self];
    const NAMES: &'static [&'static str];

    /// The choice called `name`; an unknown name gets the list.
    fn from_name(name: &str) -> Result<Self, String> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Self::ALL[i])
            .ok_or_else(|| format!("{name} is not one of {}", Self::NAMES.join(", ")))
    }

    /// The choice's name.
    fn name(self) -> &'static str
    where
        Self: PartialEq,
    {
        let at = Self::ALL.iter().position(|c| *c == self);
        Self::NAMES[at.expect("every choice is in ALL")]
    }
}
