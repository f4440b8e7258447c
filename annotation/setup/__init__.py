"""Study set-up: what admins prepare before and while annotators work.

``studies`` (settings, duplicate, archive), ``pool`` (the item pool by keys), ``pairs`` (candidate
and gold pairs), ``members`` (members, invitations; ``member_audit``: every membership change
audited), ``feedback_import`` (existing judgments and groups from files: stored; read and
checked by ``feedback_files``), ``files`` (reading the uploaded CSV, TSV, JSONL or pasted text);
the pages in ``views`` (the import page: ``import_views``) with ``forms``, their reads in
``selectors``. Study admins for their studies, staff for all (``annotation.access``); new
studies: staff. Every write is one transaction, audited, and changes nothing on an error.
"""
