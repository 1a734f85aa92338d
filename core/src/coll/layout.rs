//! Which node every rank runs on, grouped for hierarchical collectives.

use core::fmt;

/// The ranks of a communicator grouped by node, in caller-provided storage. Nodes are
/// numbered by ascending node id; within a node ranks keep their order, so a node's
/// leader (its member 0) is its lowest rank.
#[derive(Clone, Copy, Debug)]
pub struct NodeLayout<'a> {
    /// Ranks sorted by (node, rank).
    order: &'a [u32],
    /// Where each node's ranks start in `order`; one more entry than nodes.
    starts: &'a [u32],
    /// Each rank's index in `order`.
    position: &'a [u32],
    /// Each rank's node.
    node_of: &'a [u32],
}

/// A node layout that cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// No ranks.
    Empty,
    /// The storage slice is too short; it needs this many entries (`4 * ranks + 1` always
    /// suffices).
    StorageTooSmall(usize),
    /// More than `u32::MAX` ranks.
    TooManyRanks,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("a node layout needs at least one rank"),
            Self::StorageTooSmall(n) => write!(f, "node layout storage needs {n} entries"),
            Self::TooManyRanks => f.write_str("too many ranks for a node layout"),
        }
    }
}

impl<'a> NodeLayout<'a> {
    /// Groups ranks by `node_ids[rank]` into `storage` (at least `3 * ranks + nodes + 1`
    /// entries). O(P log P), once per communicator; every lookup afterwards is O(1).
    pub fn build(node_ids: &[u32], storage: &'a mut [u32]) -> Result<Self, LayoutError> {
        let p = node_ids.len();
        if p == 0 {
            return Err(LayoutError::Empty);
        }
        let size = u32::try_from(p).map_err(|_| LayoutError::TooManyRanks)?;
        if storage.len() < 3 * p + 1 {
            return Err(LayoutError::StorageTooSmall(4 * p + 1));
        }
        let (order, rest) = storage.split_at_mut(p);
        let (position, rest) = rest.split_at_mut(p);
        let (node_of, starts) = rest.split_at_mut(p);
        for (i, slot) in order.iter_mut().enumerate() {
            *slot = i as u32;
        }
        order.sort_unstable_by_key(|&r| (node_ids[r as usize], r));
        let mut nodes = 0usize;
        for (i, &r) in order.iter().enumerate() {
            position[r as usize] = i as u32;
            if i == 0 || node_ids[r as usize] != node_ids[order[i - 1] as usize] {
                if nodes + 1 >= starts.len() {
                    return Err(LayoutError::StorageTooSmall(3 * p + 2 + nodes));
                }
                starts[nodes] = i as u32;
                nodes += 1;
            }
            node_of[r as usize] = nodes as u32 - 1;
        }
        starts[nodes] = size;
        Ok(Self { order, starts: &starts[..=nodes], position, node_of })
    }

    /// Ranks.
    #[inline]
    pub fn size(&self) -> u32 {
        self.order.len() as u32
    }

    /// Nodes.
    #[inline]
    pub fn nodes(&self) -> u32 {
        self.starts.len() as u32 - 1
    }

    /// Ranks on node `node`.
    #[inline]
    pub fn node_size(&self, node: u32) -> u32 {
        self.starts[node as usize + 1] - self.starts[node as usize]
    }

    /// Member `i` of node `node`.
    #[inline]
    pub fn member(&self, node: u32, i: u32) -> u32 {
        self.order[(self.starts[node as usize] + i) as usize]
    }

    /// The leader (lowest rank) of node `node`.
    #[inline]
    pub fn leader(&self, node: u32) -> u32 {
        self.member(node, 0)
    }

    /// `(node, index within the node)` of `rank`, in O(1); `None` out of range.
    #[inline]
    pub fn locate(&self, rank: u32) -> Option<(u32, u32)> {
        let pos = *self.position.get(rank as usize)?;
        let node = self.node_of[rank as usize];
        Some((node, pos - self.starts[node as usize]))
    }

    /// Ranks sorted by (node, rank).
    #[inline]
    pub fn order(&self) -> &'a [u32] {
        self.order
    }

    /// Where each node's ranks start in [`order`](Self::order), plus the total.
    #[inline]
    pub fn starts(&self) -> &'a [u32] {
        self.starts
    }

    /// Whether a hierarchy helps: more than one node, and more than one rank on some node.
    pub fn is_hierarchical(&self) -> bool {
        self.nodes() > 1 && self.nodes() < self.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_uneven_nodes_and_locates_ranks() {
        let ids = [7, 3, 7, 7, 3, 9];
        let mut storage = [0u32; 25];
        let l = NodeLayout::build(&ids, &mut storage).unwrap();
        assert_eq!(l.nodes(), 3);
        assert_eq!(l.order(), &[1, 4, 0, 2, 3, 5]);
        assert_eq!((l.leader(0), l.leader(1), l.leader(2)), (1, 0, 5));
        assert_eq!(l.locate(3), Some((1, 2)));
        assert_eq!(l.locate(5), Some((2, 0)));
        assert_eq!(l.locate(6), None);
        assert!(l.is_hierarchical());
        let mut small = [0u32; 4];
        assert!(matches!(
            NodeLayout::build(&ids, &mut small),
            Err(LayoutError::StorageTooSmall(_))
        ));
    }
}
