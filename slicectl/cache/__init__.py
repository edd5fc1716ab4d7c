"""Informers (lists streamed or paginated, then watch -> slim records, relist with differences
on 410) and what they tell their handlers; stores and indexes. Sits on kube/ and model/."""
