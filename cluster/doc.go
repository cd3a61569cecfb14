// Package cluster is patrold's high availability: who writes (the
// leader lease, leader or standby, and the one writer), how standbys
// follow (the follower, catch-up, gaps and seeding) and how writes reach
// the writer (forwarding). See docs/CLUSTER.md.
//
// Files, one concern each:
//   - role.go: Leadership (lease holder, leader or standby, the writer);
//   - member.go: the Member (promote, fence, demote, epochs);
//   - follower.go: applying the state stream, catch-up, gaps;
//   - seed.go: serving and fetching seed copies;
//   - forward.go: a standby's writes reach the writer;
//   - metrics.go: the role and replica metrics;
//   - store.go: what the cluster needs of the database.
package cluster
