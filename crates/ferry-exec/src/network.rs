//! Which hosts a command may reach, and which addresses it never may.
//!
//! Commands have no network of their own (a namespace holding only `lo`). Where the operator
//! lists allowed hosts, a command reaches them through ferry's filtering proxy ([`crate::proxy`]),
//! which answers for each connection with this policy: the host must be on the list, and every
//! address it resolves to must be one a sandbox may reach: never a loopback, link-local,
//! multicast or unspecified address, a cloud's metadata address, or ferry's own port.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// The ports an allowed host is reached on when its entry names none.
pub const WEB_PORTS: [u16; 2] = [80, 443];

/// One entry of the allow-list: `pypi.org`, `*.pythonhosted.org` (every name under it, not the
/// name itself), `mirror.internal:8443` (that port only), `10.0.0.5`, `[2001:db8::1]:443`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    /// Lower case, without a trailing dot, an IPv6 literal without its brackets.
    name: String,
    any_subdomain: bool,
    port: Option<u16>,
}

impl AllowedHost {
    /// Whether `host` (already normalised by [`normalise_host`]) on `port` is this entry.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => WEB_PORTS.contains(&port),
        };
        let name_ok = if self.any_subdomain {
            host.strip_suffix(self.name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.name
        };
        port_ok && name_ok
    }
}

impl FromStr for AllowedHost {
    type Err = String;

    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        let entry = entry.trim();
        let bad = |why: &str| format!("'{entry}' is not an allowed host: {why}");
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (literal, after) = rest
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address in brackets is missing its ']'"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("junk after ']'"))?,
                ),
            };
            literal
                .parse::<Ipv6Addr>()
                .map_err(|_| bad("not an IPv6 address in the brackets"))?;
            (literal, port)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') => (host, Some(port)),
                Some(_) => return Err(bad("write an IPv6 address in brackets")),
                None => (entry, None),
            }
        };
        let port = port
            .map(|p| p.parse::<u16>().ok().filter(|p| *p != 0))
            .map(|p| p.ok_or_else(|| bad("the port is not a number from 1 to 65535")))
            .transpose()?;
        let (name, any_subdomain) = match host.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (host, false),
        };
        let name = normalise_host(name);
        let is_ip = name.parse::<IpAddr>().is_ok();
        let valid_name = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !(is_ip || valid_name) {
            return Err(bad(
                "a host is a name (letters, digits, '-', '.') or an address",
            ));
        }
        if any_subdomain && (is_ip || !name.contains('.')) {
            return Err(bad("'*.' goes before a domain with a dot in it"));
        }
        Ok(AllowedHost {
            name,
            any_subdomain,
            port,
        })
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.any_subdomain {
            f.write_str("*.")?;
        }
        let ipv6 = self.name.contains(':');
        match (ipv6, self.port) {
            (true, Some(port)) => write!(f, "[{}]:{port}", self.name),
            (false, Some(port)) => write!(f, "{}:{port}", self.name),
            (_, None) => f.write_str(&self.name),
        }
    }
}

/// A host name as compared: lower case, no trailing dot, no IPv6 brackets.
pub fn normalise_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// What the proxy lets a command reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    pub allowed: Vec<AllowedHost>,
    /// The ports ferry itself listens on: refused on every address, whatever resolves there.
    pub own_ports: Vec<u16>,
}

/// Why the proxy refused a connection, as the command reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NotAllowed {
        host: String,
        port: u16,
        allowed: String,
    },
    Address {
        host: String,
        address: IpAddr,
        kind: &'static str,
    },
    OwnPort {
        host: String,
        port: u16,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotAllowed {
                host,
                port,
                allowed,
            } => write!(
                f,
                "{host} port {port} is not on this server's list of hosts commands may reach \
                 (allowed: {allowed})"
            ),
            Refusal::Address {
                host,
                address,
                kind,
            } => write!(
                f,
                "{host} resolves to {address}, a {kind} address, which commands may never reach"
            ),
            Refusal::OwnPort { host, port } => write!(
                f,
                "{host} port {port} is the port ferry itself listens on, which commands may \
                 never reach"
            ),
        }
    }
}

impl NetworkPolicy {
    /// Whether any host is allowed at all (without one, commands get no proxy).
    pub fn is_open(&self) -> bool {
        !self.allowed.is_empty()
    }

    /// The allow-list in words, for answers and the server's start-up line.
    pub fn describe(&self) -> String {
        self.allowed
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The first check, on the name the command asked for (normalised by [`normalise_host`]).
    pub fn check_name(&self, host: &str, port: u16) -> Result<(), Refusal> {
        if self.own_ports.contains(&port) {
            return Err(Refusal::OwnPort {
                host: host.to_owned(),
                port,
            });
        }
        if self.allowed.iter().any(|a| a.matches(host, port)) {
            Ok(())
        } else {
            Err(Refusal::NotAllowed {
                host: host.to_owned(),
                port,
                allowed: self.describe(),
            })
        }
    }

    /// The second check, on each address the name resolved to: the connection goes to a
    /// checked address, never to a name resolved again.
    pub fn check_address(&self, host: &str, address: SocketAddr) -> Result<(), Refusal> {
        if let Some(kind) = forbidden_kind(address.ip()) {
            return Err(Refusal::Address {
                host: host.to_owned(),
                address: address.ip(),
                kind,
            });
        }
        if self.own_ports.contains(&address.port()) {
            return Err(Refusal::OwnPort {
                host: host.to_owned(),
                port: address.port(),
            });
        }
        Ok(())
    }
}

/// The cloud metadata services outside the link-local range: Alibaba's, Azure's wire server,
/// and AWS's over IPv6.
const METADATA_V4: [Ipv4Addr; 2] = [
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
];
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// What kind of address commands may never reach `ip` is, if it is one. Private ranges are
/// allowed (an operator may list an internal package mirror); the host itself is not.
pub fn forbidden_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_unicast_link_local() {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if v6 == METADATA_V6 {
                Some("cloud metadata")
            } else {
                None
            }
        }
    }
}

fn forbidden_v4(v4: Ipv4Addr) -> Option<&'static str> {
    if v4.is_loopback() {
        Some("loopback")
    } else if v4.is_unspecified() || v4.octets()[0] == 0 {
        Some("unspecified")
    } else if v4.is_link_local() {
        // 169.254.169.254 is here: the metadata service of most clouds.
        Some("link-local (cloud metadata)")
    } else if v4.is_multicast() || v4.is_broadcast() {
        Some("multicast")
    } else if METADATA_V4.contains(&v4) {
        Some("cloud metadata")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(entry: &str) -> AllowedHost {
        entry.parse().unwrap()
    }

    #[test]
    fn entries_read_as_written_and_match_their_hosts_and_ports() {
        assert!(host("PyPI.org").matches("pypi.org", 443));
        assert!(host("pypi.org").matches("pypi.org", 80));
        assert!(!host("pypi.org").matches("pypi.org", 22));
        assert!(!host("pypi.org").matches("evilpypi.org", 443));
        assert!(host("*.pythonhosted.org").matches("files.pythonhosted.org", 443));
        assert!(!host("*.pythonhosted.org").matches("pythonhosted.org", 443));
        assert!(!host("*.pythonhosted.org").matches("xpythonhosted.org", 443));
        assert!(host("mirror.internal:8443").matches("mirror.internal", 8443));
        assert!(!host("mirror.internal:8443").matches("mirror.internal", 443));
        assert!(host("[2001:db8::1]:443").matches("2001:db8::1", 443));
        for entry in [
            "pypi.org",
            "*.pythonhosted.org",
            "a.b:8443",
            "[2001:db8::1]:443",
        ] {
            assert_eq!(host(entry).to_string(), entry);
        }
        for bad in [
            "",
            "*",
            "*.org",
            "a b",
            "host:0",
            "host:x",
            "2001:db8::1",
            "[::1",
            "*.10.0.0.1",
            "http://pypi.org",
        ] {
            assert!(bad.parse::<AllowedHost>().is_err(), "{bad} refused");
        }
    }

    #[test]
    fn loopback_link_local_and_metadata_addresses_are_never_reached() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.1", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("::", "unspecified"),
            ("169.254.169.254", "link-local (cloud metadata)"),
            ("fe80::1", "link-local"),
            ("fd00:ec2::254", "cloud metadata"),
            ("100.100.100.200", "cloud metadata"),
            ("168.63.129.16", "cloud metadata"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "multicast"),
        ] {
            assert_eq!(forbidden_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in ["10.0.0.5", "192.168.1.1", "151.101.0.223", "2a04:4e42::223"] {
            assert_eq!(forbidden_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn ferrys_own_port_is_refused_on_every_address() {
        let policy = NetworkPolicy {
            allowed: vec![host("mirror.internal:8080")],
            own_ports: vec![8080],
        };
        assert!(matches!(
            policy.check_name("mirror.internal", 8080),
            Err(Refusal::OwnPort { .. })
        ));
        assert!(matches!(
            policy.check_address("mirror.internal", "10.0.0.5:8080".parse().unwrap()),
            Err(Refusal::OwnPort { .. })
        ));
        assert!(matches!(
            policy.check_name("other.internal", 443),
            Err(Refusal::NotAllowed { .. })
        ));
    }
}
