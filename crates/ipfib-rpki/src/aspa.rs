//! ASPA: validated AS provider authorizations and AS path verification
//! (draft-ietf-sidrops-aspa-verification, the upstream procedure).
//!
//! An ASPA says "customer AS C has exactly these providers". The upstream
//! procedure checks a path received from a customer or a lateral peer:
//! every hop from the origin towards the neighbour must climb from a
//! customer to one of its providers. With the path collapsed to unique
//! neighbours `AS(1)` (origin) .. `AS(N)` (the neighbour), each hop
//! `AS(i) -> AS(i+1)` is:
//! - *Provider+*: `AS(i)` has an ASPA listing `AS(i+1)`;
//! - *Not Provider+*: `AS(i)` has an ASPA and it does not list `AS(i+1)`;
//! - *No Attestation*: `AS(i)` has no ASPA.
//!
//! The outcome: Invalid if the path has an AS_SET or any hop is Not
//! Provider+; else Unknown if any hop has No Attestation; else Valid.
//!
//! What a collector must assume (it sees routes as its peers received
//! them, not as a router applying policy to its own neighbours) is in
//! docs/architecture.md, "RPKI": every route is checked as if it came from
//! a customer; an empty path answers Unknown.

use hashbrown::HashMap;

/// The ASPA outcome of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AspaStatus {
    Unknown,
    Valid,
    Invalid,
}

impl AspaStatus {
    pub const ALL: [AspaStatus; 3] = [AspaStatus::Unknown, AspaStatus::Valid, AspaStatus::Invalid];

    pub fn as_str(self) -> &'static str {
        match self {
            AspaStatus::Unknown => "unknown",
            AspaStatus::Valid => "valid",
            AspaStatus::Invalid => "invalid",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// One ASPA: a customer AS and its provider ASes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Aspa {
    pub customer: u32,
    /// Sorted, no duplicates.
    pub providers: Vec<u32>,
}

impl Aspa {
    /// An ASPA with its providers sorted and deduplicated.
    pub fn new(customer: u32, mut providers: Vec<u32>) -> Aspa {
        providers.sort_unstable();
        providers.dedup();
        Aspa {
            customer,
            providers,
        }
    }
}

/// The ASPA set: customer AS -> provider ASes. One ASPA per customer (RTR
/// and the validators' outputs merge a customer's objects into one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aspas {
    map: HashMap<u32, Box<[u32]>>,
}

/// A hop's authorisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hop {
    ProviderPlus,
    NotProviderPlus,
    NoAttestation,
}

impl Aspas {
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the ASPA of `aspa.customer` (replacing any it had).
    pub fn insert(&mut self, aspa: Aspa) {
        let a = Aspa::new(aspa.customer, aspa.providers);
        self.map.insert(a.customer, a.providers.into_boxed_slice());
    }
    /// Removes the ASPA of `customer`; false if it had none.
    pub fn remove(&mut self, customer: u32) -> bool {
        self.map.remove(&customer).is_some()
    }
    pub fn get(&self, customer: u32) -> Option<&[u32]> {
        self.map.get(&customer).map(|p| &p[..])
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn clear(&mut self) {
        self.map.clear()
    }
    /// Every ASPA, in customer order.
    pub fn to_vec(&self) -> Vec<Aspa> {
        let mut v: Vec<Aspa> = self
            .map
            .iter()
            .map(|(&c, p)| Aspa {
                customer: c,
                providers: p.to_vec(),
            })
            .collect();
        v.sort_unstable();
        v
    }
    /// Heap bytes held (approximate: the table and the provider lists).
    pub fn footprint_bytes(&self) -> usize {
        self.map.capacity() * (4 + 16 + 1) + self.map.values().map(|p| p.len() * 4).sum::<usize>()
    }

    fn hop(&self, customer: u32, provider: u32) -> Hop {
        match self.map.get(&customer) {
            None => Hop::NoAttestation,
            Some(p) if p.binary_search(&provider).is_ok() => Hop::ProviderPlus,
            Some(_) => Hop::NotProviderPlus,
        }
    }

    /// The upstream verification of an AS path given as segments (kind,
    /// ASNs) in wire order, the neighbour first, as received.
    pub fn verify_upstream<'a>(
        &self,
        segments: impl IntoIterator<Item = (u8, &'a [u32])>,
    ) -> AspaStatus {
        // Collapse to unique consecutive ASNs, origin first.
        let mut path: Vec<u32> = Vec::new();
        for (kind, asns) in segments {
            match kind {
                crate::AS_SEQUENCE => {
                    for &a in asns {
                        if path.last() != Some(&a) {
                            path.push(a);
                        }
                    }
                }
                // Confederation segments are stripped before a path leaves
                // the confederation; one seen here is internal, skip it.
                crate::AS_CONFED_SEQUENCE | crate::AS_CONFED_SET => {}
                // An AS_SET (or a kind no RFC defines) cannot be verified.
                _ => return AspaStatus::Invalid,
            }
        }
        if path.is_empty() {
            return AspaStatus::Unknown;
        }
        path.reverse();
        let mut unknown = false;
        for w in path.windows(2) {
            match self.hop(w[0], w[1]) {
                Hop::NotProviderPlus => return AspaStatus::Invalid,
                Hop::NoAttestation => unknown = true,
                Hop::ProviderPlus => {}
            }
        }
        if unknown {
            AspaStatus::Unknown
        } else {
            AspaStatus::Valid
        }
    }
}

impl FromIterator<Aspa> for Aspas {
    fn from_iter<I: IntoIterator<Item = Aspa>>(iter: I) -> Self {
        let mut s = Aspas::new();
        for a in iter {
            s.insert(a);
        }
        s
    }
}
