"""The reconcile trigger: requests a run of the program's PKO Stack when what the plan reads changes.

PKO reruns the program every resync (300 s). In between, the trigger watches what the program
lists (providers/live_reader.py `reads()`: the runtime resources, Nodes, generated Flux objects,
KubeAI Models and Pods, direct runtimes, Gateway objects, the shared ConfigMaps) and, when a
change can alter the plan, sets the Stack's `pulumi.com/reconciliation-request` annotation to a
new value, which makes PKO reconcile the Stack now. A burst of changes gives one request; status
churn (a crash-looping Pod) is requested with a growing backoff, a spec change at once. It also
holds each ModelActivation with a direct runtime (realtime, FreeToken) with a finalizer, and
deletes that runtime as soon as the activation is deleted.

Modules, from the entry point inwards:

- `main`: the console entry point (`magicstick-reconcile-trigger`);
- `settings`: command-line flags with environment fallbacks, validated;
- `probes`: `/healthz` and `/readyz`, and the small HTTP server that answers them;
- `trigger`: the threads (one per watch, the requester, the stall monitor) and their life cycle;
- `watcher`: one watch kept alive: list, watch, resume, relist on 410 and 504
  ResourceVersionTooLarge, abort a hung watch, back off on failures, notice a forbidden kind;
- `watches`: what is watched, which changes count and which are churn (pure);
- `debounce`: a burst of changes into one batch (quiet period, bounded by a maximum delay), and
  the backoff of churn;
- `events`: the Event on the Stack that reports a forbidden kind;
- `cleanup`: the finalizer cleanup of direct runtimes;
- `stack`: the request annotation, the Stalled condition and the retry of a Stalled Stack.
"""
