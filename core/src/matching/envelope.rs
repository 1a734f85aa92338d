//! What a message says about itself, and what a receive asks for.

/// The matching fields of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// The communicator's context id (point-to-point and collective traffic use different
    /// ones, so they never match each other).
    pub context: u32,
    /// The sender's rank in the communicator (for an inter-communicator: in the remote group).
    pub source: u32,
    /// The message tag.
    pub tag: i32,
}

/// Which sources a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceSel {
    /// `MPI_ANY_SOURCE`.
    Any,
    /// This communicator rank only.
    Rank(u32),
}

/// Which tags a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagSel {
    /// `MPI_ANY_TAG`.
    Any,
    /// This tag only.
    Tag(i32),
}

/// What a receive matches: one context, and a source and tag that may be wildcards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pattern {
    /// The communicator's context id; never a wildcard.
    pub context: u32,
    /// The accepted source.
    pub source: SourceSel,
    /// The accepted tag.
    pub tag: TagSel,
}

impl Pattern {
    /// A receive from exactly `source` with exactly `tag`.
    pub const fn exact(context: u32, source: u32, tag: i32) -> Self {
        Self { context, source: SourceSel::Rank(source), tag: TagSel::Tag(tag) }
    }

    /// Whether a message with this envelope satisfies the pattern.
    #[inline]
    pub fn matches(&self, envelope: &Envelope) -> bool {
        self.context == envelope.context
            && match self.source {
                SourceSel::Any => true,
                SourceSel::Rank(r) => r == envelope.source,
            }
            && match self.tag {
                TagSel::Any => true,
                TagSel::Tag(t) => t == envelope.tag,
            }
    }
}
