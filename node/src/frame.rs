//! What members say to each other on the peer port: the frames (Raft
//! messages, forwarded client requests and their answers, the opening
//! hello, and the join calls with their answers) and how one is written
//! and read (bincode, length-prefixed). Below the transport that carries
//! them, the driver that handles them and the join that asks with them, so
//! that none of those needs another for the words they share.

use leasesim_core::server::PeerMessage;
use leasesim_core::service::{ClientRequest, ClientResponse};
use leasesim_core::{NodeId, Term};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::members::PeerEntry;
use crate::view::{RangeSpec, RangeView};

/// Largest frame accepted (a snapshot travels in one frame).
const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

/// One message between members.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum PeerFrame {
    Hello {
        from: NodeId,
        name: String,
        peer_url: String,
        client_url: String,
        lock_url: String,
    },
    Raft(PeerMessage),
    /// A client request a follower forwards to the leader; `view` asks for
    /// a range of the leader's state after the request is answered.
    Forward {
        req: ClientRequest,
        view: Option<RangeSpec>,
    },
    /// The leader's answer to a forwarded request.
    Reply {
        resp: ClientResponse,
        view: Option<RangeView>,
    },
    /// A new server asks to be added (`join`): the first frame of a short
    /// connection of its own, answered by `JoinReply` on it.
    Join {
        id: NodeId,
        name: String,
        peer_url: String,
    },
    JoinReply(JoinReply),
    /// A joined server asks the leader for the voters (`join`), answered by
    /// `PeerList` on the same connection.
    FetchPeers {
        term: Term,
    },
    PeerList(PeerList),
}

/// `JoinCluster`'s answer (the design's `JoinClusterReply`, with a reason
/// when the leader refuses).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinReply {
    pub success: bool,
    pub leader_id: Option<NodeId>,
    /// The leader's peer URL, `http://host:port` ("" when unknown).
    pub leader_addr: String,
    pub term: Term,
    /// Why a leader refused ("" when it did not, or when this is a redirect).
    pub error: String,
}

/// `FetchPeerList`'s answer: every voter with its name and peer URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerList {
    pub success: bool,
    pub leader_id: Option<NodeId>,
    pub leader_addr: String,
    pub term: Term,
    pub peers: Vec<PeerEntry>,
    /// The cluster's id, so a joined member reports the same one.
    pub cluster_id: u64,
}

pub async fn write_frame<W: AsyncWriteExt + Unpin>(w: &mut W, frame: &PeerFrame) -> std::io::Result<()> {
    let bytes = bincode::serialize(frame).map_err(std::io::Error::other)?;
    w.write_all(&(bytes.len() as u32).to_le_bytes()).await?;
    w.write_all(&bytes).await
}

/// Reads one frame; `Ok(None)` at a clean end of stream.
pub async fn read_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> std::io::Result<Option<PeerFrame>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "peer frame too large"));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    bincode::deserialize(&buf).map(Some).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
