^core/src/raft/node\.rs:405:9: replace RaftNode<C, S>::send with \(\)$
^core/src/raft/node\.rs:409:9: replace RaftNode<C, S>::quorum \-> usize with 0$
^core/src/raft/node\.rs:409:9: replace RaftNode<C, S>::quorum \-> usize with 1$
^core/src/raft/node\.rs:409:31: replace \+ with \- in RaftNode<C, S>::quorum$
^core/src/raft/node\.rs:409:31: replace \+ with \* in RaftNode<C, S>::quorum$
^core/src/raft/node\.rs:409:27: replace / with % in RaftNode<C, S>::quorum$
^core/src/raft/node\.rs:409:27: replace / with \* in RaftNode<C, S>::quorum$
^core/src/raft/node\.rs:415:9: replace RaftNode<C, S>::persist_hard_state with \(\)$
^core/src/raft/node\.rs:425:9: replace RaftNode<C, S>::persist_append with \(\)$
^core/src/raft/node\.rs:429:52: replace == with != in RaftNode<C, S>::persist_append$
^core/src/raft/node\.rs:429:47: replace \+ with \- in RaftNode<C, S>::persist_append$
^core/src/raft/node\.rs:429:47: replace \+ with \* in RaftNode<C, S>::persist_append$
^core/src/raft/node\.rs:439:9: replace RaftNode<C, S>::append_new \-> LogIndex with Default::default\(\)$
^core/src/raft/node\.rs:439:43: replace \+ with \- in RaftNode<C, S>::append_new$
^core/src/raft/node\.rs:439:43: replace \+ with \* in RaftNode<C, S>::append_new$
^core/src/raft/node\.rs:451:9: replace RaftNode<C, S>::reset_election_deadline with \(\)$
^core/src/raft/node\.rs:453:49: replace \+ with \- in RaftNode<C, S>::reset_election_deadline$
^core/src/raft/node\.rs:453:49: replace \+ with \* in RaftNode<C, S>::reset_election_deadline$
^core/src/raft/node\.rs:459:9: replace RaftNode<C, S>::become_follower with \(\)$
^core/src/raft/node\.rs:459:17: replace > with == in RaftNode<C, S>::become_follower$
^core/src/raft/node\.rs:459:17: replace > with < in RaftNode<C, S>::become_follower$
^core/src/raft/node\.rs:459:17: replace > with >= in RaftNode<C, S>::become_follower$
^core/src/raft/node\.rs:464:36: replace == with != in RaftNode<C, S>::become_follower$
^core/src/raft/node\.rs:482:29: replace \|\| with \&\& in RaftNode<C, S>::become_follower$
^core/src/raft/persist\.rs:17:9: replace Persisted<C, S>::snapshot_index \-> LogIndex with Default::default\(\)$
^core/src/raft/persist\.rs:22:9: replace Persisted<C, S>::last_index \-> LogIndex with Default::default\(\)$
^core/src/raft/persist\.rs:27:9: replace Persisted<C, S>::last_term \-> Term with Default::default\(\)$
^core/src/raft/persist\.rs:39:9: replace Persisted<C, S>::refusal \-> Option<String> with None$
^core/src/raft/persist\.rs:39:9: replace Persisted<C, S>::refusal \-> Option<String> with Some\(String::new\(\)\)$
^core/src/raft/persist\.rs:39:9: replace Persisted<C, S>::refusal \-> Option<String> with Some\("xyzzy"\.into\(\)\)$
^core/src/raft/persist\.rs:42:28: replace < with == in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:42:28: replace < with > in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:42:28: replace < with <= in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:45:67: replace \&\& with \|\| in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:45:40: replace \&\& with \|\| in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:45:28: replace == with != in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:45:83: replace != with == in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:51:27: replace <= with > in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:56:50: replace \+ with \- in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:56:50: replace \+ with \* in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:57:60: replace != with == in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:63:25: replace <= with > in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:57: replace > with == in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:57: replace > with < in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:57: replace > with >= in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:89: replace != with == in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:97: replace \+ with \- in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:66:97: replace \+ with \* in Persisted<C, S>::refusal$
^core/src/raft/persist\.rs:77:9: replace Persisted<C, S>::apply with \(\)$
^core/src/raft/persist\.rs:79:79: replace < with == in Persisted<C, S>::apply$
^core/src/raft/persist\.rs:79:79: replace < with > in Persisted<C, S>::apply$
^core/src/raft/persist\.rs:79:79: replace < with <= in Persisted<C, S>::apply$
^core/src/raft/persist\.rs:88:49: replace > with == in Persisted<C, S>::apply$
^core/src/raft/persist\.rs:88:49: replace > with < in Persisted<C, S>::apply$
^core/src/raft/persist\.rs:88:49: replace > with >= in Persisted<C, S>::apply$
^core/src/raft/progress\.rs:50:9: replace Progress::on_ack \-> bool with true$
^core/src/raft/progress\.rs:50:9: replace Progress::on_ack \-> bool with false$
^core/src/raft/progress\.rs:50:30: replace > with == in Progress::on_ack$
^core/src/raft/progress\.rs:50:30: replace > with < in Progress::on_ack$
^core/src/raft/progress\.rs:50:30: replace > with >= in Progress::on_ack$
^core/src/raft/progress\.rs:56:37: replace match guard self\.match_index \+ 1 >= self\.next_index with true in Progress::on_ack$
^core/src/raft/progress\.rs:56:37: replace match guard self\.match_index \+ 1 >= self\.next_index with false in Progress::on_ack$
^core/src/raft/progress\.rs:61:60: replace match guard self\.match_index >= snap with true in Progress::on_ack$
^core/src/raft/progress\.rs:61:60: replace match guard self\.match_index >= snap with false in Progress::on_ack$
^core/src/raft/progress\.rs:56:58: replace >= with < in Progress::on_ack$
^core/src/raft/progress\.rs:56:54: replace \+ with \- in Progress::on_ack$
^core/src/raft/progress\.rs:56:54: replace \+ with \* in Progress::on_ack$
^core/src/raft/progress\.rs:61:77: replace >= with < in Progress::on_ack$
^core/src/raft/progress\.rs:64:52: replace \+ with \- in Progress::on_ack$
^core/src/raft/progress\.rs:64:52: replace \+ with \* in Progress::on_ack$
^core/src/raft/progress\.rs:68:64: replace \+ with \- in Progress::on_ack$
^core/src/raft/progress\.rs:68:64: replace \+ with \* in Progress::on_ack$
^core/src/raft/progress\.rs:77:9: replace Progress::on_reject \-> bool with true$
^core/src/raft/progress\.rs:77:9: replace Progress::on_reject \-> bool with false$
^core/src/raft/progress\.rs:78:55: replace <= with > in Progress::on_reject$
^core/src/raft/progress\.rs:79:55: replace != with == in Progress::on_reject$
^core/src/raft/progress\.rs:79:51: replace \+ with \- in Progress::on_reject$
^core/src/raft/progress\.rs:79:51: replace \+ with \* in Progress::on_reject$
^core/src/raft/progress\.rs:85:36: replace \+ with \- in Progress::on_reject$
^core/src/raft/progress\.rs:85:36: replace \+ with \* in Progress::on_reject$
^core/src/raft/progress\.rs:95:9: replace Progress::in_flight \-> u64 with 0$
^core/src/raft/progress\.rs:95:9: replace Progress::in_flight \-> u64 with 1$
^core/src/raft/progress\.rs:95:57: replace \+ with \- in Progress::in_flight$
^core/src/raft/progress\.rs:95:57: replace \+ with \* in Progress::in_flight$
^core/src/raft/read_index\.rs:48:9: replace ReadState::on_term_committed with \(\)$
^core/src/raft/read_index\.rs:57:9: replace RaftNode<C, S>::read_index_inner \-> Result<\(\), ProposeError> with Ok\(\(\)\)$
^core/src/raft/read_index\.rs:57:22: replace != with == in RaftNode<C, S>::read_index_inner$
^core/src/raft/read_index\.rs:76:9: replace RaftNode<C, S>::advance_reads with \(\)$
^core/src/raft/read_index\.rs:77:38: replace \|\| with \&\& in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:77:22: replace != with == in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:77:72: replace \&\& with \|\| in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:77:75: delete ! in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:84:32: replace match guard read\.round <= confirmed_round with true in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:84:32: replace match guard read\.round <= confirmed_round with false in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:84:43: replace <= with > in RaftNode<C, S>::advance_reads$
^core/src/raft/read_index\.rs:98:9: replace RaftNode<C, S>::confirmed_round \-> u64 with 0$
^core/src/raft/read_index\.rs:98:9: replace RaftNode<C, S>::confirmed_round \-> u64 with 1$
^core/src/raft/read_index\.rs:101:28: replace == with != in RaftNode<C, S>::confirmed_round$
^core/src/raft/read_index\.rs:104:55: replace \- with \+ in RaftNode<C, S>::confirmed_round$
^core/src/raft/read_index\.rs:104:55: replace \- with / in RaftNode<C, S>::confirmed_round$
^core/src/raft/read_index\.rs:111:9: replace RaftNode<C, S>::fail_reads with \(\)$
^core/src/raft/replication\.rs:18:9: replace RaftNode<C, S>::flush_appends with \(\)$
^core/src/raft/replication\.rs:18:22: replace != with == in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:24:71: replace \* with \+ in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:24:71: replace \* with / in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:26:37: delete ! in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:27:69: replace \&\& with \|\| in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:27:55: replace <= with > in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:27:87: replace < with == in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:27:87: replace < with > in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:27:87: replace < with <= in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:32:12: delete ! in RaftNode<C, S>::flush_appends$
^core/src/raft/replication\.rs:46:9: replace RaftNode<C, S>::send_append with \(\)$
^core/src/raft/replication\.rs:50:41: replace \- with \+ in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:50:41: replace \- with / in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:56:68: replace \- with \+ in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:56:68: replace \- with / in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:56:62: replace \+ with \- in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:56:62: replace \+ with \* in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:61:59: replace \+= with \-= in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:61:59: replace \+= with \*= in RaftNode<C, S>::send_append$
^core/src/raft/replication\.rs:89:9: replace RaftNode<C, S>::send_without_prev with \(\)$
^core/src/raft/replication\.rs:89:27: replace < with == in RaftNode<C, S>::send_without_prev$
^core/src/raft/replication\.rs:89:27: replace < with > in RaftNode<C, S>::send_without_prev$
^core/src/raft/replication\.rs:89:27: replace < with <= in RaftNode<C, S>::send_without_prev$
^core/src/raft/replication\.rs:98:25: replace == with != in RaftNode<C, S>::send_without_prev$
^core/src/raft/replication\.rs:108:9: replace RaftNode<C, S>::send_empty_append with \(\)$
^core/src/raft/replication\.rs:124:9: replace RaftNode<C, S>::send_heartbeat with \(\)$
^core/src/raft/replication\.rs:129:52: replace \- with \+ in RaftNode<C, S>::send_heartbeat$
^core/src/raft/replication\.rs:129:52: replace \- with / in RaftNode<C, S>::send_heartbeat$
^core/src/raft/replication\.rs:148:9: replace RaftNode<C, S>::broadcast_heartbeat with \(\)$
^core/src/raft/replication\.rs:160:9: replace RaftNode<C, S>::accept_leader_contact \-> bool with true$
^core/src/raft/replication\.rs:160:9: replace RaftNode<C, S>::accept_leader_contact \-> bool with false$
^core/src/raft/replication\.rs:160:22: replace == with != in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:163:40: replace \|\| with \&\& in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:163:22: replace != with == in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:163:58: replace != with == in RaftNode<C, S>::accept_leader_contact$
^core/src/raft/replication\.rs:182:9: replace RaftNode<C, S>::handle_append_entries with \(\)$
^core/src/raft/replication\.rs:182:12: delete ! in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:189:27: replace < with <= in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:190:32: replace \- with \+ in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:190:32: replace \- with / in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:191:30: replace <= with > in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:200:45: replace != with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:202:48: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:202:48: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:203:87: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:203:87: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:208:45: replace \+ with \- in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:208:45: replace \+ with \* in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with == in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with < in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:213:23: replace > with >= in RaftNode<C, S>::handle_append_entries$
^core/src/raft/replication\.rs:223:9: replace RaftNode<C, S>::store_entries with \(\)$
^core/src/raft/replication\.rs:223:85: replace != with == in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:230:24: replace <= with > in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:237:37: delete ! in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:32: replace \|= with \&= in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:82: replace \&\& with \|\| in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:244:67: replace >= with < in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:250:12: delete ! in RaftNode<C, S>::store_entries$
^core/src/raft/replication\.rs:273:9: replace RaftNode<C, S>::reply_append with \(\)$
^core/src/raft/replication\.rs:287:9: replace RaftNode<C, S>::handle_append_response with \(\)$
^core/src/raft/replication\.rs:287:22: replace != with == in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:295:38: replace \+ with \- in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:295:38: replace \+ with \* in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:71: replace \&\& with \|\| in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:20: replace \&\& with \|\| in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:62: replace == with != in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:317:74: delete ! in RaftNode<C, S>::handle_append_response$
^core/src/raft/replication\.rs:328:9: replace RaftNode<C, S>::maybe_commit with \(\)$
^core/src/raft/replication\.rs:328:22: replace != with == in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:335:28: replace == with != in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:341:47: replace \- with \+ in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:341:47: replace \- with / in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:342:22: replace <= with > in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:345:55: replace == with != in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:25: replace \&\& with \|\| in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:12: delete ! in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:346:28: delete ! in RaftNode<C, S>::maybe_commit$
^core/src/raft/replication\.rs:355:9: replace RaftNode<C, S>::on_leader_commit with \(\)$
^core/src/raft/replication\.rs:362:46: replace \&\& with \|\| in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:362:12: delete ! in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:362:71: replace >= with < in RaftNode<C, S>::on_leader_commit$
^core/src/raft/replication\.rs:368:9: replace RaftNode<C, S>::any_raft_bug \-> bool with true$
^core/src/raft/snapshot\.rs:15:9: replace RaftNode<C, S>::compact_inner with \(\)$
^core/src/raft/snapshot\.rs:15:26: replace <= with > in RaftNode<C, S>::compact_inner$
^core/src/raft/snapshot\.rs:35:9: replace RaftNode<C, S>::send_snapshot with \(\)$
^core/src/raft/snapshot\.rs:48:9: replace RaftNode<C, S>::handle_install_snapshot with \(\)$
^core/src/raft/snapshot\.rs:48:12: delete ! in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:54:32: replace <= with > in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:69: replace \&\& with \|\| in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:41: replace != with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with == in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with < in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:62:94: replace > with >= in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:63:54: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:63:54: replace \+ with \* in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:64:28: replace <= with > in RaftNode<C, S>::handle_install_snapshot$
^core/src/raft/snapshot\.rs:96:9: replace RaftNode<C, S>::heartbeat_during_snapshot with \(\)$
^core/src/raft/snapshot\.rs:96:38: replace >= with < in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:96:100: replace / with % in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:96:100: replace / with \* in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: replace match guard !resend_due with true in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: replace match guard !resend_due with false in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:99:36: delete ! in RaftNode<C, S>::heartbeat_during_snapshot$
^core/src/raft/snapshot\.rs:105:9: replace RaftNode<C, S>::handle_install_snapshot_response with \(\)$
^core/src/raft/snapshot\.rs:105:22: replace != with == in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with == in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with < in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:113:35: replace > with >= in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:115:40: replace \+ with \- in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/snapshot\.rs:115:40: replace \+ with \* in RaftNode<C, S>::handle_install_snapshot_response$
^core/src/raft/transfer\.rs:36:9: replace RaftNode<C, S>::transfer_leadership \-> Result<\(\), TransferError> with Ok\(\(\)\)$
^core/src/raft/transfer\.rs:44:9: replace RaftNode<C, S>::transfer_target \-> Option<NodeId> with None$
^core/src/raft/transfer\.rs:44:9: replace RaftNode<C, S>::transfer_target \-> Option<NodeId> with Some\(Default::default\(\)\)$
^core/src/raft/transfer\.rs:48:9: replace RaftNode<C, S>::start_transfer \-> Result<\(\), TransferError> with Ok\(\(\)\)$
^core/src/raft/transfer\.rs:48:22: replace != with == in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:51:19: replace == with != in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:43: replace \|\| with \&\& in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:12: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:54:46: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:58:32: replace == with != in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:60:39: replace \+ with \- in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:60:39: replace \+ with \* in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:64:12: delete ! in RaftNode<C, S>::start_transfer$
^core/src/raft/transfer\.rs:74:9: replace RaftNode<C, S>::transfer_if_caught_up \-> bool with true$
^core/src/raft/transfer\.rs:74:9: replace RaftNode<C, S>::transfer_if_caught_up \-> bool with false$
^core/src/raft/transfer\.rs:80:84: replace == with != in RaftNode<C, S>::transfer_if_caught_up$
^core/src/raft/transfer\.rs:82:45: delete field sent from struct Transfer expression in RaftNode<C, S>::transfer_if_caught_up$
^core/src/raft/transfer\.rs:91:9: replace RaftNode<C, S>::expire_transfer with \(\)$
^core/src/raft/transfer\.rs:91:54: replace >= with < in RaftNode<C, S>::expire_transfer$
^core/src/raft/transfer\.rs:99:9: replace RaftNode<C, S>::handle_timeout_now with \(\)$
^core/src/raft/transfer\.rs:99:70: replace \|\| with \&\& in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:38: replace \|\| with \&\& in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:22: replace == with != in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:56: replace != with == in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/transfer\.rs:99:73: delete ! in RaftNode<C, S>::handle_timeout_now$
^core/src/raft/types\.rs:161:9: replace Message<C, S>::term \-> Term with Default::default\(\)$
^core/src/raft/types\.rs:240:9: replace Ready<C, S>::is_empty \-> bool with true$
^core/src/raft/types\.rs:240:9: replace Ready<C, S>::is_empty \-> bool with false$
^core/src/raft/types\.rs:246:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:245:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:244:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:243:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:242:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
^core/src/raft/types\.rs:241:13: replace \&\& with \|\| in Ready<C, S>::is_empty$
