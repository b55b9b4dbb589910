"""The reconcile trigger: requests a run of the program's PKO Stack when what the plan reads changes.

PKO reruns the program every resync (300 s). In between, the trigger watches what the program
lists (providers/live_reader.py `reads()`: the runtime resources, Nodes, generated Flux objects,
KubeAI Models and Pods, direct runtimes, Gateway objects, the shared ConfigMaps) and, when a
change can alter the plan, sets the Stack's `pulumi.com/reconciliation-request` annotation to a
new value, which makes PKO reconcile the Stack now. A burst of changes gives one request.

Modules, from the entry point inwards:

- `main`: the console entry point (`magicstick-reconcile-trigger`);
- `settings`: command-line flags with environment fallbacks, validated;
- `trigger`: the threads (one per watch, the requester, the stall monitor) and their life cycle;
- `watcher`: one watch kept alive: list, watch, resume, relist on 410, back off on failures;
- `watches`: what is watched and which changes count (pure);
- `debounce`: a burst of changes into one batch (quiet period, bounded by a maximum delay);
- `stack`: the request annotation, the Stalled condition and the retry of a Stalled Stack.
"""
