"""Informers (paginated list + watch -> slim records, relist with differences on 410), stores
and indexes. Sits on kube/ and model/."""
