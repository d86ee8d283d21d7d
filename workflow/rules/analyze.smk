# rules for the analyze stage are added by its issue
