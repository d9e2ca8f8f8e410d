//! Who is asking: the identity a door has verified (a bearer token over HTTP and MCP, a
//! signed request over S3), before any use case runs (docs/reference/auth.md).

use crate::error::{Error, Result};

/// The agent id shown in events when an agent token names none.
pub const DEFAULT_AGENT_ID: &str = "agent";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A person (`role: authenticated`).
    User { sub: String },
    /// An agent bound to one thread, acting for the thread's owner `sub`.
    Agent {
        sub: String,
        thread: String,
        agent_id: String,
    },
    /// A trusted orchestrator. Supabase's service keys carry no `sub`; one that does may also
    /// use that user's spaces.
    Service { sub: Option<String> },
}

impl Principal {
    /// Who this caller is, as one string, for counting what each caller holds: a user, an
    /// agent of one thread, or a service token (with its `sub`, if any).
    pub fn identity_key(&self) -> String {
        match self {
            Principal::User { sub } => format!("user:{sub}"),
            Principal::Agent { sub, thread, .. } => format!("agent:{sub}:{thread}"),
            Principal::Service { sub } => format!("service:{}", sub.as_deref().unwrap_or("")),
        }
    }

    /// The user whose spaces this caller reaches (docs/reference/auth.md, who may use spaces).
    pub fn space_owner(&self) -> Result<&str> {
        match self {
            Principal::User { sub } | Principal::Agent { sub, .. } => Ok(sub),
            Principal::Service { sub: Some(sub) } => Ok(sub),
            Principal::Service { sub: None } => Err(Error::forbidden(
                "a service_role token needs a 'sub' claim to use spaces: spaces belong to a user",
            )),
        }
    }

    /// The agent id events show for what this caller does on the agent's side: the agent
    /// token's own, or the default for service_role.
    pub fn agent_id(&self) -> &str {
        match self {
            Principal::Agent { agent_id, .. } => agent_id,
            _ => DEFAULT_AGENT_ID,
        }
    }
}

/// A principal as it is kept beyond the request that verified it (an S3 key, a file URL's
/// grant): its role and the claims that make it up. The one mapping between the two.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Recorded {
    /// `user`, `agent` or `service`.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// An agent's thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// An agent's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Principal {
    /// How this principal is kept.
    pub fn recorded(&self) -> Recorded {
        let (role, sub, thread, agent) = match self {
            Principal::User { sub } => ("user", Some(sub.clone()), None, None),
            Principal::Agent {
                sub,
                thread,
                agent_id,
            } => (
                "agent",
                Some(sub.clone()),
                Some(thread.clone()),
                Some(agent_id.clone()),
            ),
            Principal::Service { sub } => ("service", sub.clone(), None, None),
        };
        Recorded {
            role: role.to_owned(),
            sub,
            thread,
            agent,
        }
    }
}

impl Recorded {
    /// The principal it records, or `None` when its parts do not make one.
    pub fn principal(self) -> Option<Principal> {
        Some(
            match (self.role.as_str(), self.sub, self.thread, self.agent) {
                ("user", Some(sub), None, None) => Principal::User { sub },
                ("agent", Some(sub), Some(thread), Some(agent_id)) => Principal::Agent {
                    sub,
                    thread,
                    agent_id,
                },
                ("service", sub, None, None) => Principal::Service { sub },
                _ => return None,
            },
        )
    }
}
