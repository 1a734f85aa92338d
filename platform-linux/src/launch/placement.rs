//! Which node label each rank gets.

use std::str::FromStr;

/// How ranks are spread over node labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Consecutive ranks share a node: 0 0 1 1 2 2 for six ranks on three nodes.
    Block,
    /// Ranks go round the nodes: 0 1 2 0 1 2.
    Cyclic,
}

impl Placement {
    /// The node of `rank` in a job of `procs` ranks over `nodes` nodes (`nodes >= 1`).
    pub fn node_of(self, rank: usize, procs: usize, nodes: usize) -> usize {
        let nodes = nodes.max(1);
        match self {
            Placement::Block => {
                let per_node = procs.div_ceil(nodes).max(1);
                (rank / per_node).min(nodes - 1)
            }
            Placement::Cyclic => rank % nodes,
        }
    }
}

impl FromStr for Placement {
    type Err = String;

    fn from_str(text: &str) -> Result<Placement, String> {
        match text {
            "block" => Ok(Placement::Block),
            "cyclic" => Ok(Placement::Cyclic),
            other => Err(format!("--placement must be block or cyclic, not {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_cyclic_cover_every_node() {
        let block: Vec<_> = (0..6).map(|r| Placement::Block.node_of(r, 6, 3)).collect();
        assert_eq!(block, [0, 0, 1, 1, 2, 2]);
        let cyclic: Vec<_> = (0..6).map(|r| Placement::Cyclic.node_of(r, 6, 3)).collect();
        assert_eq!(cyclic, [0, 1, 2, 0, 1, 2]);
        let uneven: Vec<_> = (0..8).map(|r| Placement::Block.node_of(r, 8, 3)).collect();
        assert_eq!(uneven, [0, 0, 0, 1, 1, 1, 2, 2]);
    }
}
