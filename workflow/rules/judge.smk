# rules for the judge stage are added by its issue
