"""The imperative shell: work queue with batching and backoff, workers, slice tracker, plan ->
patches, status. Wires kube/, cache/ and reconcile/.
"""
